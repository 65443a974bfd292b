/**
 * How Roster's values cross the PostgreSQL driver. In: typed array parameters for the
 * `unnest(...)` batches — the driver infers an untyped array's element type from its
 * values, which fails for an all-null column (no retry times in a batch of failures)
 * and for numbers that mix int4 and int8 ranges; naming the element type avoids both,
 * and BIGINT elements go as bigint (epoch ms need 64 bits). Out: BIGINT columns come
 * back as bigint and are read as numbers (epoch ms and durations fit in 53 bits).
 */
// The module alone, not the package index: its pool and client need not load with it.
import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Result } from "effect"

const typed = (values: ReadonlyArray<unknown>, oid: number): PgTypes.Parameter => Result.getOrThrow(PgTypes.array(values, oid))

/** A `text[]` parameter. */
export const textArray = (values: ReadonlyArray<string | null>): PgTypes.Parameter => typed(values, PgTypes.OID.text)

/** An `int4[]` parameter. */
export const int4Array = (values: ReadonlyArray<number | null>): PgTypes.Parameter => typed(values, PgTypes.OID.int4)

/** An `int8[]` parameter from numbers (rounded to whole milliseconds). */
export const int8Array = (values: ReadonlyArray<number | null>): PgTypes.Parameter =>
  typed(values.map((v) => (v === null ? null : BigInt(Math.round(v)))), PgTypes.OID.int8)

/** A BIGINT as the driver returns it. */
export type Int8 = bigint | number | string

/** A BIGINT as a number. */
export const num = (v: Int8): number => Number(v)

/** A nullable BIGINT as a number or null. */
export const numOrNull = (v: Int8 | null): number | null => (v === null ? null : Number(v))
