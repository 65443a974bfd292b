/**
 * The http-app's own tables, in the Roster SQLite file, and the signup transaction:
 * the user row, the welcome email's execution and the subscription row commit
 * together or not at all (`enqueueWithin` writes the execution through this same
 * connection, inside the open transaction).
 */
import { Database } from "bun:sqlite"
import { Effect } from "effect"
import { enqueueWithin } from "roster"
import { welcomeEmail } from "./apps/accounts/jobs.ts"

/** Opens the app's connection to the Roster file (already migrated by `Roster.open`) and creates its tables. */
export const openDatabase = (path: string): Database => {
  const db = new Database(path)
  db.run("PRAGMA busy_timeout = 5000")
  db.run("CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, welcome_execution_id TEXT NOT NULL) STRICT")
  db.run(`CREATE TABLE IF NOT EXISTS subscriptions (
    user_id TEXT PRIMARY KEY REFERENCES users (id),
    plan TEXT NOT NULL CHECK (plan IN ('free', 'pro'))
  ) STRICT`)
  return db
}

/** A new user, with the id of the welcome email's execution. */
export interface Signup {
  readonly userId: string
  readonly welcomeExecutionId: string
}

/**
 * Signs a user up in one transaction. Throws, and so rolls back everything written so
 * far — the execution included — on a duplicate email (SQLITE_CONSTRAINT_UNIQUE) or an
 * unknown plan (SQLITE_CONSTRAINT_CHECK).
 */
export const signUp = (db: Database, input: { readonly email: string; readonly plan: string }): Signup =>
  db.transaction((): Signup => {
    const userId = crypto.randomUUID()
    const welcome = Effect.runSync(enqueueWithin(db, welcomeEmail, { userId, email: input.email }))
    db.query("INSERT INTO users (id, email, welcome_execution_id) VALUES (?, ?, ?)").run(userId, input.email, welcome.id)
    db.query("INSERT INTO subscriptions (user_id, plan) VALUES (?, ?)").run(userId, input.plan)
    return { userId, welcomeExecutionId: welcome.id }
  })()
