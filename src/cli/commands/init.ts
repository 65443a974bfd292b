/**
 * `roster init [--app NAME] [--roster SPEC] [DIR]`: creates a complete project in DIR
 * (default: the working directory; created if missing) — package.json, tsconfig.json,
 * .gitignore, roster.config.ts and `apps/<app>/` with a Job, its services, a Schedule
 * and a test (see Scaffold.ts). `--roster` is the spec of the `roster` dependency
 * (default `^` this version; e.g. `file:/path/to/roster-0.1.0.tgz`). Refuses, writing
 * nothing, when any of those files already exists (exit 1).
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { join } from "node:path"
import { isKebab } from "../../jobs/Job.ts"
import { CliFailure, printLine } from "../Output.ts"
import { defaultRosterSpec, existingFiles, packageNameOf, scaffoldFiles, writeFiles } from "../Scaffold.ts"

/** The init command. */
export const init = Command.make(
  "init",
  {
    app: Flag.String("app").pipe(Flag.withDescription("name of the first app, kebab-case (default hello)"), Flag.withDefault("hello")),
    roster: Flag.String("roster").pipe(
      Flag.withDescription(`the roster dependency in package.json: a version range or file:/path/to/roster-<version>.tgz (default ${defaultRosterSpec})`),
      Flag.withDefault(defaultRosterSpec)
    ),
    dir: Argument.String("dir").pipe(Argument.withDescription("the project folder (default: the working directory)"), Argument.withDefault("."))
  },
  (flags) =>
    Effect.gen(function*() {
      if (!isKebab(flags.app)) return yield* Effect.fail(new CliFailure(`--app "${flags.app}" must be kebab-case (e.g. billing or send-mail)`, 2))
      if (flags.roster.trim() === "") return yield* Effect.fail(new CliFailure("--roster must not be empty", 2))
      const files = scaffoldFiles({ app: flags.app, name: packageNameOf(flags.dir), roster: flags.roster })
      const existing = existingFiles(flags.dir, files)
      if (existing.length > 0) {
        return yield* Effect.fail(new CliFailure(`roster init overwrites nothing, and ${existing.join(", ")} already exist${existing.length === 1 ? "s" : ""}`))
      }
      yield* Effect.try({
        try: () => writeFiles(flags.dir, files),
        catch: (e) => new CliFailure(`cannot write the project files: ${(e as Error).message}`)
      })
      for (const f of files) yield* printLine(`created ${join(flags.dir, f.path)}`)
      const cd = flags.dir === "." ? "" : `cd ${flags.dir} && `
      yield* printLine(`next: ${cd}npm install, then bun run check, bun run test, bun run roster enqueue ${flags.app}/greet --payload '{"name":"you"}' and bun run worker`)
    })
).pipe(Command.withDescription("Create a project (package.json, tsconfig.json, roster.config.ts and a first app with a Job, its services, a Schedule and a test) in a folder"))
