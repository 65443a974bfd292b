/**
 * What `roster init` writes: a roster.config.ts and one app with a Job and a Schedule,
 * importing from the `roster` package, so that `roster check` passes on it at once and
 * `roster worker` runs its Job. Files are only ever created, never overwritten.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"

/** A file to create, relative to the project folder. */
export interface ScaffoldFile {
  readonly path: string
  readonly text: string
}

const configText = `/**
 * Roster's configuration: the database, where the apps live, and the queues.
 * ROSTER_DB and ROSTER_APPS_DIR (and the other ROSTER_* variables) override it.
 */
import { defineConfig } from "roster"

export default defineConfig({
  db: "roster.db",
  appsDir: "apps",
  queues: { default: { concurrency: 10 } }
})
`

const jobsText = (app: string) => `/**
 * The ${app} app's Jobs: every Job this module exports is found by \`roster worker\`.
 */
import { Effect, Schema } from "effect"
import { Job } from "roster"

/** Greets someone: logs one line and returns the greeting. */
export const greet = Job.make({
  id: "${app}/greet",
  label: "Greet",
  payload: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String }),
  handler: ({ name }) => Effect.log(\`hello, \${name}\`).pipe(Effect.as({ greeting: \`hello, \${name}\` }))
})
`

const schedulesText = (app: string) => `/**
 * The ${app} app's Schedules: \`roster scheduler\` enqueues each one when it is due.
 */
import { JobSchedule } from "roster"
import { greet } from "./jobs.ts"

/** Every hour on the hour (UTC), greet the world. */
export const hourlyGreeting = JobSchedule.make({
  id: "${app}/hourly-greeting",
  job: greet,
  payload: { name: "world" },
  cron: "0 * * * *",
  label: "Hourly greeting"
})
`

/** The files of a new project with one app. */
export const scaffoldFiles = (app: string): ReadonlyArray<ScaffoldFile> => [
  { path: "roster.config.ts", text: configText },
  { path: join("apps", app, "jobs.ts"), text: jobsText(app) },
  { path: join("apps", app, "schedules.ts"), text: schedulesText(app) }
]

/** The files among `files` that already exist under `dir`. */
export const existingFiles = (dir: string, files: ReadonlyArray<ScaffoldFile>): ReadonlyArray<string> =>
  files.map((f) => join(dir, f.path)).filter((path) => existsSync(path))

/** Writes `files` under `dir`, creating folders; `wx` makes a file that appeared meanwhile an error, not a loss. */
export const writeFiles = (dir: string, files: ReadonlyArray<ScaffoldFile>): void => {
  for (const f of files) {
    const path = join(dir, f.path)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, f.text, { flag: "wx" })
  }
}
