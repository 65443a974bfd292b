/**
 * `roster build [--outfile PATH] [--target TARGET]`: one executable holding the
 * runtime, the CLI (worker, scheduler, dev, dashboard and the rest) and the project's
 * apps and config. It validates the apps as `roster check` does, writes an entry that
 * imports them statically (see BuildEntry.ts) and compiles it with `bun build
 * --compile`, using the Bun this CLI runs under. A binary cannot build another: it has
 * neither Bun nor the sources.
 */
import { Clock, Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { existsSync, mkdirSync, renameSync, statSync, writeFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import * as Config from "../../runtime/Config.ts"
import * as RegistryLoader from "../../runtime/RegistryLoader.ts"
import { appModulesOnDisk, entryDirOf, entryFileOf, entrySource } from "../BuildEntry.ts"
import { Embedded } from "../Embedded.ts"
import { CliFailure, printLine } from "../Output.ts"

/** Whether this process is a compiled executable (its modules live in Bun's embedded file system). */
const isCompiled = (): boolean => import.meta.path.startsWith("/$bunfs/") || import.meta.path.includes("~BUN")

/** Runs `bun build --compile`; fails with bun's own output when it does not succeed. */
const compile = (args: ReadonlyArray<string>) =>
  Effect.tryPromise({
    try: async (signal) => {
      const proc = Bun.spawn([process.execPath, "build", ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" })
      signal.addEventListener("abort", () => proc.kill())
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      return { code, output: `${stdout}${stderr}`.trim() }
    },
    catch: (e) => new CliFailure(`cannot run ${process.execPath} build: ${(e as Error).message}`)
  }).pipe(Effect.flatMap(({ code, output }) =>
    code === 0 ? Effect.void : Effect.fail(new CliFailure(`bun build --compile failed (exit ${code}):\n${output}`))
  ))

/** The build command. */
export const build = Command.make(
  "build",
  {
    outfile: Flag.String("outfile").pipe(Flag.withDescription("the executable to write (default dist/roster)"), Flag.withDefault(join("dist", "roster"))),
    target: Flag.String("target").pipe(Flag.withDescription("bun's compile target, e.g. bun-linux-x64, bun-linux-arm64 (default: this machine)"), Flag.optional)
  },
  (flags) =>
    Effect.gen(function*() {
      if ((yield* Embedded) !== undefined || isCompiled()) {
        return yield* Effect.fail(new CliFailure("roster build runs from the project's sources (bun run roster build); this binary cannot build another"))
      }
      const projectDir = process.cwd()
      const started = yield* Clock.currentTimeMillis
      const config = yield* Config.load(projectDir)
      // Fail before compiling on anything `roster check` would reject.
      const registry = yield* RegistryLoader.build(config)
      const appsDir = RegistryLoader.appsDirOf(config)
      const configFile = resolve(projectDir, "roster.config.ts")
      const plan = {
        // From the package, this module is dist/cli/commands/build.js next to main.js.
        cliMain: resolve(import.meta.dir, import.meta.path.endsWith(".js") ? "../main.js" : "../main.ts"),
        configFile: existsSync(configFile) ? configFile : undefined,
        appsDir,
        // Jobs given in code come in through roster.config.ts; the apps folder is then not used.
        modules: config.jobs === undefined ? appModulesOnDisk(projectDir, appsDir) : []
      }
      const entry = entryFileOf(projectDir)
      const outfile = resolve(projectDir, flags.outfile)
      yield* Effect.try({
        try: () => {
          mkdirSync(entryDirOf(projectDir), { recursive: true })
          // Written aside and renamed: a build running at the same time never compiles a half-written entry.
          writeFileSync(`${entry}.${process.pid}`, entrySource(plan, entryDirOf(projectDir)))
          renameSync(`${entry}.${process.pid}`, entry)
          mkdirSync(dirname(outfile), { recursive: true })
        },
        catch: (e) => new CliFailure(`cannot write the build entry: ${(e as Error).message}`)
      })
      const target = Option.getOrUndefined(flags.target)
      // bunfig.toml where the binary runs must not change it (preloads, …); .env is still read, as `bun run` does.
      yield* compile(["--compile", "--no-compile-autoload-bunfig", entry, "--outfile", outfile, ...(target ? ["--target", target] : [])])
      const elapsedMs = (yield* Clock.currentTimeMillis) - started
      const megabytes = statSync(outfile).size / 1024 / 1024
      const apps = [...new Set(plan.modules.map((m) => m.app))]
      const shown = relative(projectDir, outfile).startsWith("..") ? outfile : relative(projectDir, outfile)
      yield* printLine(
        `built ${shown} (${megabytes.toFixed(1)} MB) in ${(elapsedMs / 1000).toFixed(1)} s: ` +
          `${apps.length} app(s)${apps.length ? ` (${apps.join(", ")})` : ""}, ${registry.jobs.size} job(s), ${registry.schedules.length} schedule(s)` +
          `${target ? `, target ${target}` : ""}`
      )
    })
).pipe(Command.withDescription("Compile the runtime, the CLI and the project's apps into one executable (bun build --compile)"))
