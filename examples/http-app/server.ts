/**
 * An HTTP app on Bun.serve that enqueues from a request handler with a transactional
 * enqueue: `POST /signup {"email", "plan"?}` inserts the user and enqueues
 * `accounts/welcome-email` in the same SQLite transaction (see signups.ts);
 * `GET /users/:id` shows the user and how the email's execution is doing. A separate
 * `roster worker` process runs the emails (README.md in this folder).
 *
 *   ROSTER_DB (default examples/http-app/.data/app.db), PORT (default 3000; 0 = any free port)
 */
import { SQLiteError } from "bun:sqlite"
import { mkdirSync } from "node:fs"
import { dirname, join } from "node:path"
import { Roster } from "roster"
import { welcomeEmail } from "./apps/accounts/jobs.ts"
import { openDatabase, signUp } from "./signups.ts"

const dbPath = process.env.ROSTER_DB ?? join(import.meta.dir, ".data", "app.db")
mkdirSync(dirname(dbPath), { recursive: true })
// Roster.open migrates the file (so enqueueWithin finds its tables) and serves the reads.
const roster = await Roster.open({ db: dbPath, jobs: [welcomeEmail] })
const db = openDatabase(dbPath)

const failure = (status: number, error: string) => Response.json({ error }, { status })

/** Maps a failed signup to an HTTP answer; everything it wrote was rolled back. */
const signupFailure = (e: unknown): Response => {
  if (e instanceof SQLiteError && e.code === "SQLITE_CONSTRAINT_UNIQUE") return failure(409, "email already signed up")
  if (e instanceof SQLiteError && e.code === "SQLITE_CONSTRAINT_CHECK") return failure(400, "unknown plan")
  throw e
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 3000),
  hostname: "127.0.0.1",
  routes: {
    "/signup": {
      POST: async (req) => {
        const body = (await req.json().catch(() => null)) as { email?: unknown; plan?: unknown } | null
        if (typeof body?.email !== "string" || (body.plan !== undefined && typeof body.plan !== "string")) {
          return failure(400, 'expected {"email": string, "plan"?: string}')
        }
        try {
          return Response.json(signUp(db, { email: body.email, plan: body.plan ?? "free" }), { status: 201 })
        } catch (e) {
          return signupFailure(e)
        }
      }
    },
    "/users/:id": {
      GET: async (req) => {
        const user = db.query<{ id: string; email: string; plan: string; welcome_execution_id: string }, [string]>(
          "SELECT u.id, u.email, s.plan, u.welcome_execution_id FROM users u JOIN subscriptions s ON s.user_id = u.id WHERE u.id = ?"
        ).get(req.params.id)
        if (!user) return failure(404, "no such user")
        const execution = await roster.get(user.welcome_execution_id)
        return Response.json({ id: user.id, email: user.email, plan: user.plan, welcomeEmail: { id: execution?.id, state: execution?.state } })
      }
    }
  },
  fetch: () => failure(404, "not found")
})
console.log(`listening on ${server.url.href}`)

const shutdown = async () => {
  await server.stop()
  db.close()
  await roster.close()
  process.exit(0)
}
process.on("SIGTERM", shutdown)
process.on("SIGINT", shutdown)
