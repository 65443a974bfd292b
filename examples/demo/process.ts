/**
 * The demo's view of a `roster` child process: started with the CLI on the demo's
 * database, its log lines (logfmt on stderr) echoed as `time name message`, waited on
 * until a line says it is ready, and stopped with SIGTERM like a process manager would.
 */
import { join } from "node:path"

/** A running `roster <command>` process. */
export interface DemoProcess {
  /** Resolves once a log line matches `pattern`; rejects if the process exits first. */
  readonly ready: (pattern: RegExp) => Promise<void>
  /** Sends SIGTERM and resolves with the exit code. */
  readonly stop: () => Promise<number | null>
}

const field = (line: string, name: string): string | undefined =>
  new RegExp(`(?:^| )${name}=(?:"((?:[^"\\\\]|\\\\.)*)"|(\\S+))`).exec(line)?.slice(1).find((v) => v !== undefined)

/** One logfmt line as `hh:mm:ss.mmm name LEVEL message` (level shown only when not INFO). */
const format = (name: string, line: string): string | undefined => {
  const message = field(line, "message")
  if (message === undefined) return undefined
  const time = field(line, "timestamp")?.slice(11, 23) ?? ""
  const level = field(line, "level") ?? "INFO"
  return `   ${time} ${name.padEnd(9)} ${level === "INFO" ? "" : `${level} `}${message.replaceAll('\\"', '"')}`
}

/** Starts `roster <command>` from the repository root on `db` with the apps in `appsDir`. */
export const startRoster = (command: string, options: { readonly root: string; readonly db: string; readonly appsDir: string }): DemoProcess => {
  const child = Bun.spawn([process.execPath, join(options.root, "src/cli/main.ts"), command], {
    cwd: options.root,
    env: { ...process.env, ROSTER_DB: options.db, ROSTER_APPS_DIR: options.appsDir },
    stdout: "inherit",
    stderr: "pipe"
  })
  const waiting: Array<{ pattern: RegExp; resolve: () => void }> = []
  const output = (async () => {
    let pending = ""
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      const lines = (pending + chunk).split("\n")
      pending = lines.pop()!
      for (const line of lines) {
        const shown = format(command, line)
        if (shown === undefined) {
          if (line.trim() !== "") console.log(`   ${command}: ${line}`)
          continue
        }
        console.log(shown)
        for (const w of waiting.filter((w) => w.pattern.test(line))) {
          waiting.splice(waiting.indexOf(w), 1)
          w.resolve()
        }
      }
    }
  })()
  const exited = child.exited.then(async (code) => {
    await output
    return code
  })
  return {
    ready: (pattern) =>
      new Promise<void>((resolve, reject) => {
        waiting.push({ pattern, resolve })
        exited.then((code) => reject(new Error(`roster ${command} exited with code ${code} before it was ready`)))
      }),
    stop: () => {
      child.kill("SIGTERM")
      return exited
    }
  }
}
