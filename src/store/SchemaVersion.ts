/**
 * A database migrated by a newer Roster is refused, never used: its tables may hold
 * columns or states this build does not know, and writing to them could lose work. Both
 * drivers compare the applied migration level with the newest they know, inside the
 * migration transaction and before touching anything (graphile-worker does the same).
 */
import { StoreError } from "./Store.ts"

/** The refusal: `database X: schema is version N, this Roster knows up to M: upgrade Roster`. */
export const schemaTooNew = (database: string, applied: number, known: number): StoreError =>
  new StoreError({
    message: `database ${database}: schema is version ${applied}, this Roster knows up to ${known}: upgrade Roster`,
    reason: "schema-too-new"
  })
