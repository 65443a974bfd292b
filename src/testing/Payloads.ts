/**
 * Payloads drawn from a Job's own Schema, for property tests. Effect derives the
 * generator from the Schema's decoded type (with its checks, so every value is one
 * the Schema accepts); a seed picks one value, so any property-testing runner — the
 * examples use fast-check — can drive it with a generated integer and replay a failure
 * from its seed.
 */
import { Arbitrary, Effect } from "effect"
import type { AnySchema } from "../jobs/Job.ts"

const derived = new WeakMap<AnySchema, Arbitrary.Arbitrary<unknown>>()

const arbitraryOf = (schema: AnySchema): Arbitrary.Arbitrary<unknown> => {
  let arb = derived.get(schema)
  if (!arb) derived.set(schema, (arb = Arbitrary.schema(schema)))
  return arb
}

/** Effect's Arbitrary for a Job's payload type (use with `Arbitrary.checkEffect`). */
export const payloadArbitrary = <P extends AnySchema>(job: { readonly payload: P }): Arbitrary.Arbitrary<P["Type"]> =>
  arbitraryOf(job.payload) as Arbitrary.Arbitrary<P["Type"]>

/**
 * One payload of the Job's Schema, chosen by `seed`; `size` (default 10) bounds how
 * large unconstrained strings, arrays and records grow. The same seed and size give
 * the same payload.
 */
export const samplePayload = <P extends AnySchema>(job: { readonly payload: P }, seed: number, size = 10): P["Type"] => {
  const [value] = Effect.runSync(Arbitrary.sampleEffect(arbitraryOf(job.payload), { count: 1, seed, size }))
  return value as P["Type"]
}
