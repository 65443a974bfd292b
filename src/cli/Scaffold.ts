/**
 * What `roster init` writes: a complete project (DESIGN §7) — package.json with the
 * `worker`, `scheduler`, `dev`, `dashboard`, `check` and `test` scripts, a strict
 * tsconfig.json, .gitignore, roster.config.ts and one app with a Job that uses a service,
 * the app's services.ts, a Schedule and a test — so that after `npm install`,
 * `bun run check`, `bun run test`, `bun run worker` and `bun run scheduler` work at once.
 * Files are only ever created, never overwritten.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { basename, dirname, join, resolve } from "node:path"

/** A file to create, relative to the project folder. */
export interface ScaffoldFile {
  readonly path: string
  readonly text: string
}

/** What the project is made for. */
export interface ScaffoldOptions {
  /** The first app's name (kebab-case). */
  readonly app: string
  /** The project's package name (see `packageNameOf`). */
  readonly name: string
  /** The `roster` dependency's spec in package.json: a range, `file:…tgz`, a git URL. */
  readonly roster: string
}

/**
 * The versions a new project asks for: this Roster and the peers it is built and tested
 * with. Written here rather than read from package.json so that a compiled binary has
 * them too; tests/cli/init.test.ts checks that they match package.json.
 */
export const versions = {
  roster: "0.1.0",
  effect: "4.1.0",
  bun: "1.4.5",
  typesBun: "1.4.5",
  typescript: "5.9.3"
} as const

/** The default spec of the `roster` dependency: this version or a compatible later one. */
export const defaultRosterSpec = `^${versions.roster}`

/** A valid npm package name for a project in `dir`: its folder name, lower-cased, other characters as `-`. */
export const packageNameOf = (dir: string): string => {
  const name = basename(resolve(dir)).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+|[._-]+$/g, "")
  return name === "" ? "roster-project" : name
}

const packageJson = (options: ScaffoldOptions): string =>
  `${
    JSON.stringify(
      {
        name: options.name,
        version: "0.1.0",
        private: true,
        type: "module",
        scripts: {
          worker: "roster worker",
          scheduler: "roster scheduler",
          dev: "roster dev",
          dashboard: "roster dashboard",
          check: "roster check",
          test: "tsc --noEmit && bun test",
          build: "roster build",
          roster: "roster"
        },
        dependencies: {
          effect: `^${versions.effect}`,
          roster: options.roster
        },
        devDependencies: {
          "@types/bun": `^${versions.typesBun}`,
          bun: `^${versions.bun}`,
          typescript: `^${versions.typescript}`
        },
        // npm 11 runs no dependency's install script unless allowed; bun's fetches its binary.
        allowScripts: { bun: true }
      },
      null,
      2
    )
  }\n`

const tsconfigText = `{
  "compilerOptions": {
    "target": "ESNext",
    "module": "Preserve",
    "moduleResolution": "bundler",
    // DOM: effect's declarations name a few web types (JsonWebKey).
    "lib": ["ESNext", "DOM"],
    "types": ["bun"],
    "strict": true,
    "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true,
    "noPropertyAccessFromIndexSignature": true,
    "noImplicitOverride": true,
    "noUnusedLocals": true,
    "verbatimModuleSyntax": true,
    // Bun runs the .ts files as they are, and they import each other as "./jobs.ts".
    "allowImportingTsExtensions": true,
    "noEmit": true
  },
  "exclude": ["node_modules", "dist", ".roster"]
}
`

const gitignoreText = `node_modules/
*.db
*.db-wal
*.db-shm
.roster/
dist/
`

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

const servicesText = (app: string) => `/**
 * The services the ${app} app's handlers require. The worker builds the Layer this
 * module exports by default once per process and provides it to every execution of the
 * app's Jobs; a test provides it (or another Layer) itself.
 */
import { Context, Effect, Layer } from "effect"

/** Makes greetings. Replace it with what your Jobs need: a mailer, a database, an API client. */
export class Greeter extends Context.Service<Greeter, {
  readonly greet: (name: string) => Effect.Effect<string>
}>()("${app}/Greeter") {}

export default Layer.succeed(Greeter, {
  greet: (name) => Effect.succeed(\`hello, \${name}\`)
})
`

const jobsText = (app: string) => `/**
 * The ${app} app's Jobs: every Job this module exports is found by \`roster worker\`.
 */
import { Effect, Schema } from "effect"
import { Job } from "roster"
import { Greeter } from "./services.ts"

/** Greets someone: the greeting comes from the app's Greeter (services.ts), is logged and returned. */
export const greet = Job.make({
  id: "${app}/greet",
  label: "Greet",
  payload: Schema.Struct({ name: Schema.String }),
  result: Schema.Struct({ greeting: Schema.String }),
  handler: ({ name }) =>
    Effect.gen(function*() {
      const greeter = yield* Greeter
      const greeting = yield* greeter.greet(name)
      yield* Effect.log(greeting)
      return { greeting }
    })
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

const testText = (app: string) => `/**
 * The ${app} app's Job and Schedule on roster/testing: the real Roster runtime (an
 * in-memory database, the real worker and scheduler) on Effect's TestClock (\`bun test\`).
 */
import { expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { RosterTest } from "roster/testing"
import { greet } from "./jobs.ts"
import { hourlyGreeting } from "./schedules.ts"
import services, { Greeter } from "./services.ts"

test("greet returns and logs the Greeter's greeting", () =>
  Effect.gen(function*() {
    const t = yield* RosterTest.make({ jobs: [greet], services })
    const { id } = yield* t.enqueue(greet, { name: "you" })
    yield* t.drain
    const execution = yield* t.execution(id)
    expect(execution).toMatchObject({ state: "succeeded", result: { greeting: "hello, you" } })
    expect(execution.logs.map((l) => l.message)).toContain("hello, you")
  }).pipe(Effect.scoped, Effect.runPromise))

test("greet uses whatever Greeter it is given", () =>
  Effect.gen(function*() {
    const shouting = Layer.succeed(Greeter, { greet: (name) => Effect.succeed(\`HELLO, \${name.toUpperCase()}\`) })
    const t = yield* RosterTest.make({ jobs: [greet], services: shouting })
    const { id } = yield* t.enqueue(greet, { name: "you" })
    yield* t.drain
    expect((yield* t.execution(id)).result).toEqual({ greeting: "HELLO, YOU" })
  }).pipe(Effect.scoped, Effect.runPromise))

test("the hourly greeting fires on the hour and greets the world", () =>
  Effect.gen(function*() {
    const t = yield* RosterTest.make({ jobs: [greet], schedules: [hourlyGreeting], services })
    yield* t.advance("2 hours")
    const fires = yield* t.fires(hourlyGreeting.id)
    expect(fires.map((f) => f.dueAt)).toEqual([3_600_000, 7_200_000])
    const runs = yield* t.executions({ scheduleId: hourlyGreeting.id })
    expect(runs.map((e) => e.result)).toEqual([{ greeting: "hello, world" }, { greeting: "hello, world" }])
  }).pipe(Effect.scoped, Effect.runPromise))
`

/** The files of a new project with one app. */
export const scaffoldFiles = (options: ScaffoldOptions): ReadonlyArray<ScaffoldFile> => [
  { path: "package.json", text: packageJson(options) },
  { path: "tsconfig.json", text: tsconfigText },
  { path: ".gitignore", text: gitignoreText },
  { path: "roster.config.ts", text: configText },
  { path: join("apps", options.app, "services.ts"), text: servicesText(options.app) },
  { path: join("apps", options.app, "jobs.ts"), text: jobsText(options.app) },
  { path: join("apps", options.app, "schedules.ts"), text: schedulesText(options.app) },
  { path: join("apps", options.app, "jobs.test.ts"), text: testText(options.app) }
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
