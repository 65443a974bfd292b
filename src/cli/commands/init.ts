/**
 * `roster init [--app NAME] [DIR]`: creates roster.config.ts and
 * `apps/<app>/{jobs,schedules}.ts` in DIR (default: the working directory; created if
 * missing). Refuses, writing nothing, when any of those files already exists (exit 1).
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { join } from "node:path"
import { isKebab } from "../../jobs/Job.ts"
import { CliFailure, printLine } from "../Output.ts"
import { existingFiles, scaffoldFiles, writeFiles } from "../Scaffold.ts"

/** The init command. */
export const init = Command.make(
  "init",
  {
    app: Flag.String("app").pipe(Flag.withDescription("name of the first app, kebab-case (default hello)"), Flag.withDefault("hello")),
    dir: Argument.String("dir").pipe(Argument.withDescription("the project folder (default: the working directory)"), Argument.withDefault("."))
  },
  (flags) =>
    Effect.gen(function*() {
      if (!isKebab(flags.app)) return yield* Effect.fail(new CliFailure(`--app "${flags.app}" must be kebab-case (e.g. billing or send-mail)`, 2))
      const files = scaffoldFiles(flags.app)
      const existing = existingFiles(flags.dir, files)
      if (existing.length > 0) {
        return yield* Effect.fail(new CliFailure(`roster init overwrites nothing, and ${existing.join(", ")} already exist${existing.length === 1 ? "s" : ""}`))
      }
      yield* Effect.try({
        try: () => writeFiles(flags.dir, files),
        catch: (e) => new CliFailure(`cannot write the project files: ${(e as Error).message}`)
      })
      for (const f of files) yield* printLine(`created ${join(flags.dir, f.path)}`)
      yield* printLine(`next: roster check, then roster enqueue ${flags.app}/greet --payload '{"name":"you"}' and roster worker`)
    })
).pipe(Command.withDescription("Create roster.config.ts and a first app (a Job and a Schedule) in a folder"))
