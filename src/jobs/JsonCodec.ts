/**
 * Payloads and results cross the store as JSON: each Job's Schema is turned into its
 * JSON codec once (`Schema.toCodecJson`), and the synchronous decoder and encoder of
 * that codec are built once too, so the hot paths (enqueue, claim → handler) parse
 * without building a parser per call.
 */
import { Cause, type Exit, Schema } from "effect"

type Codec = Schema.Codec<any, any>

interface Compiled {
  readonly decode: ReturnType<typeof Schema.decodeUnknownExit<Codec>>
  readonly encode: ReturnType<typeof Schema.encodeUnknownExit<Codec>>
}

const compiled = new WeakMap<object, Compiled>()

/** The JSON decoder and encoder of a Schema, built on first use. */
export const jsonCodecOf = (schema: Codec): Compiled => {
  let c = compiled.get(schema)
  if (!c) {
    const json = Schema.toCodecJson(schema)
    compiled.set(schema, (c = { decode: Schema.decodeUnknownExit(json), encode: Schema.encodeUnknownExit(json) }))
  }
  return c
}

/** One-line message of a schema failure. */
export const oneLine = (message: string): string => message.replace(/\s*\n\s*/g, " ")

/** The one-line message of a failed decode or encode. */
export const failureMessage = (exit: Exit.Failure<unknown, unknown>): string => {
  const e = Cause.findErrorOption(exit.cause)
  return oneLine(e._tag === "Some" && e.value instanceof Error ? e.value.message : Cause.pretty(exit.cause))
}
