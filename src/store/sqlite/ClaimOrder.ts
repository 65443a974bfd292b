/**
 * SQLite's claim order: priority DESC, run_at ASC, then the order the rows were stored in
 * (their rowid), which the claim index ends with without holding the id (migration 9).
 * PostgreSQL breaks the same ties by id (ExecutionRow.byClaimOrder); the two agree for ids
 * made in one process, since UUIDv7 ids are made in increasing order and stored in it.
 * Claims return their rows with `rowid AS seq`, as RETURNING gives rows in no set order.
 */
import type { Execution } from "../Execution.ts"
import { type ExecutionRow, int } from "../ExecutionRow.ts"

/** A claimed row with its rowid. */
export type ClaimedRow = ExecutionRow & { readonly seq: number }

/** Claim order of claimed rows. */
export const byRowClaimOrder = (a: ClaimedRow, b: ClaimedRow): number =>
  b.priority - a.priority || int(a.run_at) - int(b.run_at) || a.seq - b.seq

/** Claim order of executions whose rowids `seqs` holds. */
export const byClaimOrderIn = (seqs: ReadonlyMap<string, number>) => (a: Execution, b: Execution): number =>
  b.priority - a.priority || a.runAt - b.runAt || seqs.get(a.id)! - seqs.get(b.id)!
