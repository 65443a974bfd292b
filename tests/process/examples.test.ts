/**
 * The examples run as a user would run them (issue 8), as real processes on a real
 * SQLite file:
 * - examples/promise-app: a plain async program on `Roster.open` exits 0 with the
 *   checksums it computed and the failure it expected;
 * - examples/http-app: the Bun.serve app on a free port with a separate `roster worker`
 *   — a signup writes the user and its welcome email in one transaction and the worker
 *   sends it; a failing signup rolls back both the user and the execution;
 * - examples/readme: the README's snippets (kept verbatim, tests/docs/readme.test.ts)
 *   enqueue from Effect and from async code, and a worker runs what they enqueued.
 */
import { describe, expect, test } from "bun:test"
import { join } from "node:path"
import { bunBinary, type RosterProcess, repoRoot, type Scratch, spawnRoster, tail, useScratch, waitFor } from "../support/processes.ts"

/** Starts `bun <script>` (a path under examples/) in the scratch folder, on its database. */
const startScript = (s: Scratch, script: string, env: Readonly<Record<string, string>> = {}): RosterProcess =>
  spawnRoster([join(repoRoot, "examples", script)], { cwd: s.dir, env: s.env(env), command: [bunBinary] })

/** What `GET /users/:id` answers. */
interface User {
  readonly id: string
  readonly email: string
  readonly plan: string
  readonly welcomeEmail: { readonly id: string; readonly state: string }
}

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex")

describe("examples/promise-app", () => {
  const scratch = useScratch()

  test("enqueues, runs a worker in-process, waits, lists and closes: exit 0 with the expected results", async () => {
    const s = scratch()
    const r = await startScript(s, "promise-app/main.ts").wait(30_000)
    expect(r.code, tail(r.stderr)).toBe(0)
    expect(r.stdout).toMatch(new RegExp(`succeeded "hello" +sha256=${sha256("hello")}\n`))
    expect(r.stdout).toMatch(new RegExp(`succeeded "world" +sha256=${sha256("world")}\n`))
    expect(r.stdout).toMatch(/failed +"" +error: nothing to hash\n/)
    expect(r.stdout).toContain(`counts: {"queued":0,"running":0,"waiting":0,"succeeded":2,"failed":1,"cancelled":0}`)
    // The permanent failure was not retried.
    expect(s.count("SELECT COUNT(*) FROM roster_attempts WHERE outcome = 'failed'")).toBe(1)
    expect(s.count("SELECT MAX(attempt) FROM roster_executions")).toBe(1)
  }, 60_000)
})

describe("examples/http-app", () => {
  const scratch = useScratch({ apps: join(repoRoot, "examples/http-app/apps") })

  test("a signup enqueues its welcome email in its transaction; a worker sends it; a failing signup rolls back both rows", async () => {
    const s = scratch()
    const server = startScript(s, "http-app/server.ts", { PORT: "0" })
    try {
      const url = await waitFor("the server to listen", () => {
        if (server.exited) throw new Error(`server exited:\n${tail(server.stderrSoFar())}`)
        return /listening on (\S+)/.exec(server.stdoutSoFar())?.[1]
      })
      const worker = s.spawn(["worker"])
      const signup = (body: unknown) => fetch(new URL("signup", url), { method: "POST", body: JSON.stringify(body) })

      const created = await signup({ email: "ada@example.com" })
      expect(created.status).toBe(201)
      const { userId, welcomeExecutionId } = (await created.json()) as { userId: string; welcomeExecutionId: string }
      const user = await waitFor("the worker to send the welcome email", async () => {
        const u = (await (await fetch(new URL(`users/${userId}`, url))).json()) as User
        return u.welcomeEmail.state === "succeeded" && u
      })
      expect(user).toEqual({ id: userId, email: "ada@example.com", plan: "free", welcomeEmail: { id: welcomeExecutionId, state: "succeeded" } })
      await waitFor("the worker's log line", () => worker.stderrSoFar().includes(`welcome email to ada@example.com (idempotency key ${welcomeExecutionId}:send)`))
      const executions = () => s.count("SELECT COUNT(*) FROM roster_executions")
      expect(executions()).toBe(1)

      // The plan is checked by the last insert, after the execution was written: both roll back.
      const badPlan = await signup({ email: "bob@example.com", plan: "platinum" })
      expect(badPlan.status).toBe(400)
      expect(await badPlan.json()).toEqual({ error: "unknown plan" })
      expect(s.count("SELECT COUNT(*) FROM users WHERE email = 'bob@example.com'")).toBe(0)
      expect(executions()).toBe(1)
      // A duplicate email fails the user insert, after the execution was written: it rolls back.
      const duplicate = await signup({ email: "ada@example.com" })
      expect(duplicate.status).toBe(409)
      expect(executions()).toBe(1)
      expect(s.count("SELECT COUNT(*) FROM users")).toBe(1)

      // A second good signup still works after the rollbacks.
      const again = await signup({ email: "cy@example.com", plan: "pro" })
      expect(again.status).toBe(201)
      await waitFor("the second email", () => s.count("SELECT COUNT(*) FROM roster_executions WHERE state = 'succeeded'") === 2)

      worker.kill("SIGTERM")
      expect((await worker.wait()).code).toBe(0)
      server.kill("SIGTERM")
      expect((await server.wait()).code).toBe(0)
    } finally {
      server.kill("SIGKILL")
    }
  }, 60_000)
})

describe("examples/readme (the README's snippets)", () => {
  const scratch = useScratch({ apps: join(repoRoot, "examples/readme/apps") })

  test("enqueue from Effect and from async code into roster.db; check passes; a worker runs both with their steps", async () => {
    const s = scratch()
    const check = await s.run(["check"])
    expect(check.code, check.stderr).toBe(0)
    expect(check.stdout).toContain("1 schedule(s)")
    // Both snippets open roster.db in the working directory: the scratch's database.
    expect(s.db).toBe(join(s.dir, "roster.db"))
    for (const script of ["readme/enqueue-effect.ts", "readme/enqueue-async.ts"]) {
      const r = await startScript(s, script).wait(30_000)
      expect(r.code, `${script}: ${tail(r.stderr)}`).toBe(0)
      expect(r.stdout).toMatch(/execution [0-9a-f-]{36}/)
    }
    const worker = await s.run(["worker", "--exit-when-idle"])
    expect(worker.code, tail(worker.stderr)).toBe(0)
    const rows = s.all<{ job: string; state: string; key: string; steps: number }>(
      "SELECT job, state, idempotency_key AS key, (SELECT COUNT(*) FROM roster_steps t WHERE t.execution_id = e.id) AS steps FROM roster_executions e ORDER BY key"
    )
    expect(rows).toEqual([
      { job: "billing/send-invoice", state: "succeeded", key: "invoice:inv_42", steps: 2 },
      { job: "billing/send-invoice", state: "succeeded", key: "invoice:inv_43", steps: 2 }
    ])
  }, 60_000)
})
