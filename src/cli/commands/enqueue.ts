/**
 * `roster enqueue <app/job>`: one execution from `--payload JSON`, or one per line of
 * `--ndjson FILE` (`-` for stdin). A bulk is all or nothing: every line is parsed and
 * validated before anything is written, then all are inserted in one transaction; a
 * refusal names the first bad line and writes nothing.
 */
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { readFileSync } from "node:fs"
import { Client, itemPrefix } from "../../runtime/Client.ts"
import { dedupeModes } from "../../runtime/Enqueue.ts"
import { runtimeLayer } from "../Environment.ts"
import { CliFailure, printJson, printLine } from "../Output.ts"

const parseJson = (text: string, where: string) =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) => new CliFailure(`${where} is not valid JSON: ${(e as Error).message}`, 2)
  })

/** The bulk's refusal of item `item` of `of`, told by its line in the input. */
const byLine = (lineNumbers: ReadonlyArray<number>) => <E extends { readonly message: string; readonly item?: number | undefined }>(e: E): E | CliFailure => {
  if (e.item === undefined) return e
  const prefix = itemPrefix(e.item, lineNumbers.length)
  const reason = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message
  return new CliFailure(`line ${lineNumbers[e.item - 1]}: ${reason} (nothing was enqueued)`)
}

/**
 * Reads and parses every line of a bulk (a line that is not JSON is a usage error
 * naming it) before anything is validated or written. The text and its lines are
 * dropped once parsed: a bulk is held in memory once, as payloads.
 */
const readBulk = <O>(source: string, job: string, options: O) =>
  Effect.try({
    try: () => {
      const lines = readFileSync(source === "-" ? 0 : source, "utf8").split("\n")
      const items: Array<{ readonly job: string; readonly payload: unknown; readonly options: O }> = []
      const lineNumbers: Array<number> = []
      for (let i = 0; i < lines.length; i++) {
        const line = lines[i]!.trim()
        if (line.length === 0) continue
        let payload: unknown
        try {
          payload = JSON.parse(line)
        } catch (e) {
          throw new CliFailure(`line ${i + 1} is not valid JSON: ${(e as Error).message}`, 2)
        }
        items.push({ job, payload, options })
        lineNumbers.push(i + 1)
      }
      return { items, lineNumbers }
    },
    catch: (e) => (e instanceof CliFailure ? e : new CliFailure(`cannot read ${source}: ${(e as Error).message}`))
  })

/** The enqueue command. */
export const enqueue = Command.make(
  "enqueue",
  {
    job: Argument.String("job").pipe(Argument.withDescription("the Job id, <app>/<job>")),
    payload: Flag.String("payload").pipe(Flag.withDescription("the payload as JSON"), Flag.optional),
    ndjson: Flag.String("ndjson").pipe(Flag.withDescription("a file with one JSON payload per line, or - for stdin"), Flag.optional),
    key: Flag.String("idempotency-key").pipe(Flag.withDescription("dedupe key: an existing (job, key) returns the existing execution"), Flag.optional),
    dedupe: Flag.Literals("dedupe", dedupeModes).pipe(
      Flag.withDescription("how --idempotency-key dedupes: forever (default), active (only while queued or running), replace (debounce: a queued one takes this payload and run time)"),
      Flag.optional
    ),
    delay: Flag.Int("delay-ms").pipe(Flag.withDescription("run no earlier than this many ms from now"), Flag.optional),
    priority: Flag.Int("priority").pipe(Flag.withDescription("override the Job's priority (higher first)"), Flag.optional),
    concurrencyKey: Flag.String("concurrency-key").pipe(
      Flag.withDescription("the key the Job's per-key concurrency counts this execution under, instead of the one its payload gives (only for a Job with concurrency)"),
      Flag.optional
    ),
    json: Flag.Boolean("json").pipe(Flag.withDescription("print JSON"), Flag.withDefault(false))
  },
  (flags) =>
    Effect.gen(function*() {
      const client = yield* Client
      const options = {
        idempotencyKey: Option.getOrUndefined(flags.key),
        dedupe: Option.getOrUndefined(flags.dedupe),
        delayMs: Option.getOrUndefined(flags.delay),
        priority: Option.getOrUndefined(flags.priority),
        concurrencyKey: Option.getOrUndefined(flags.concurrencyKey)
      }
      if (Option.isSome(flags.ndjson)) {
        if (Option.isSome(flags.payload)) return yield* Effect.fail(new CliFailure("use either --payload or --ndjson, not both", 2))
        if (Option.isSome(flags.key)) {
          return yield* Effect.fail(new CliFailure("--idempotency-key applies to one execution; it cannot be combined with --ndjson", 2))
        }
        const source = flags.ndjson.value
        const bulk = yield* readBulk(source, flags.job, options)
        const results = yield* client.enqueueMany(bulk.items).pipe(Effect.mapError(byLine(bulk.lineNumbers)))
        let inserted = 0
        let existing = 0
        for (const r of results) r.inserted ? inserted++ : existing++
        if (flags.json) yield* printJson({ inserted, existing })
        else yield* printLine(`enqueued ${inserted} execution(s) of ${flags.job}${existing ? `; ${existing} already existed` : ""}`)
        return
      }
      const payload = yield* parseJson(Option.getOrElse(flags.payload, () => "{}"), "--payload")
      const result = yield* client.enqueue(flags.job, payload, options)
      // With --dedupe, `replaced` is always there; without it, { id, inserted } as before.
      if (flags.json) yield* printJson(Option.isSome(flags.dedupe) ? { id: result.id, inserted: result.inserted, replaced: result.replaced ?? false } : result)
      else yield* printLine(`${result.inserted ? "enqueued" : result.replaced ? "replaced the queued" : "already enqueued"} ${flags.job} ${result.id}`)
    }).pipe(Effect.provide(runtimeLayer))
).pipe(Command.withDescription("Enqueue executions of a Job"))
