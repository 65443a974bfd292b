/**
 * Where an execution lives in the SQLite table: its rowid (the `seq` column, an INTEGER
 * PRIMARY KEY) is made from its id, so the table needs no index of the id (migration 10).
 *
 * An id is a UUIDv7, `tttttttt-tttt-7ccc-…`: 48 bits of milliseconds, then 12 bits that
 * Bun's generator counts up within a millisecond (it moves to the next millisecond when
 * they run out), then random bits. The rowid is `(ms − 2020-01-01) × 4096 + counter`:
 * - one process's ids have distinct, increasing rowids, so the table is appended to and
 *   ties in the claim order fall to the id, as on PostgreSQL (ClaimOrder.ts);
 * - it is a safe JavaScript integer for ids from 1950 to 2089;
 * - ids made by two processes in the same millisecond can share a rowid (their counters
 *   start at random). The second row to be stored is then displaced: it gets a rowid below
 *   {@link displacedBelow}, where a small partial index of the id finds it (an id that is
 *   not a UUIDv7 is displaced the same way). The id a caller holds never changes.
 *
 * Why: a third B-tree is a third page written by every one-row commit. Without the id's
 * index a one-row commit at NORMAL took 20–30% less and a bulk row 20% less, and lookups
 * by id became rowid seeks (bench/RESULTS.md, eighteenth pass).
 *
 * A lookup binds the rowid and still compares the id, so a string that is not a stored
 * id (of any shape) finds nothing. SQL that meets an id in a column or a JSON list (a
 * parent, a child, a tree) computes the same rowid with {@link rowidSql}.
 */

/** 2020-01-01T00:00:00Z: the rowid's zero, so that ids to 2089 give safe integers. */
const epochMs = 1_577_836_800_000

/** Rowids below this are displaced rows (found by the index `roster_executions_displaced`); 1970's ids are above it. */
export const displacedBelow = -7_000_000_000_000_000

/** The latest millisecond whose rowid is a safe integer. */
const lastMs = epochMs + Math.floor((Number.MAX_SAFE_INTEGER - 4095) / 4096)

const hex = "[0-9a-f]"
/** The same shape as an SQLite GLOB pattern. */
export const idShapeGlob = [8, 4, 0, 4, 12].map((n, i) => (i === 2 ? `7${hex.repeat(3)}` : hex.repeat(n))).join("-")

/** Each character code's value as a lower-case hex digit, or -1. */
const digit = new Int8Array(128).fill(-1)
for (let c = 0; c < 16; c++) digit["0123456789abcdef".charCodeAt(c)] = c

/** The hex digit at `i` of `id`, or -1 (past the end, or not a lower-case hex digit). */
const digitOf = (id: string, i: number): number => {
  const c = id.charCodeAt(i)
  return c < 128 ? digit[c]! : -1
}

const dash = 45
const seven = 55

/**
 * The rowid an id is stored at unless displaced: for a lower-case UUIDv7 of 1970–2089
 * (`xxxxxxxx-xxxx-7xxx-xxxx-xxxxxxxxxxxx`, x a digit of 0–9a-f); null for any other
 * string (stored displaced, if stored at all). One pass over the characters, no regular
 * expression and no substrings: it runs for every row inserted and every outcome.
 */
export const rowidOf = (id: string): number | null => {
  if (id.length !== 36 || id.charCodeAt(8) !== dash || id.charCodeAt(13) !== dash || id.charCodeAt(14) !== seven ||
    id.charCodeAt(18) !== dash || id.charCodeAt(23) !== dash) return null
  let ms = 0
  for (let i = 0; i < 13; i++) {
    if (i === 8) continue
    const d = digitOf(id, i)
    if (d < 0) return null
    ms = ms * 16 + d
  }
  let counter = 0
  for (let i = 15; i < 18; i++) {
    const d = digitOf(id, i)
    if (d < 0) return null
    counter = counter * 16 + d
  }
  for (let i = 19; i < 36; i++) if (i !== 23 && digitOf(id, i) < 0) return null
  return ms > lastMs ? null : (ms - epochMs) * 4096 + counter
}

// The 15 hex digits of the rowid, as 1-based positions in the id's text.
const digitAt = [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 16, 17, 18]

/**
 * {@link rowidOf} in SQL, over the SQL expression `text` (a column, a parameter,
 * `j.value`), for a UUIDv7 of 1970–2089; for another string, some number, which
 * {@link byIdSql} checks against the id.
 */
export const rowidSql = (text: string): string =>
  `((${digitAt.map((p, i) => `((instr('0123456789abcdef', substr(${text}, ${p}, 1)) - 1) << ${4 * (14 - i)})`).join(" | ")}) - ${epochMs * 4096})`

/**
 * The condition that picks the execution whose id is the SQL expression `text`: its
 * rowid seek, or the displaced rows' index, and the id compared either way. `table` is
 * the alias of roster_executions in the statement, if any.
 */
export const byIdSql = (text: string, table = ""): string => {
  const t = table === "" ? "" : `${table}.`
  return `${t}seq IN (${rowidSql(text)}, (SELECT d.seq FROM roster_executions d WHERE d.seq < ${displacedBelow} AND d.id = ${text})) AND ${t}id = ${text}`
}

/**
 * The condition that picks the executions whose ids the SQL query `ids` gives (one
 * column named `value`, such as `SELECT value FROM json_each(?1)`). `table` as in {@link byIdSql}.
 */
export const inIdsSql = (ids: string, table = ""): string => {
  const t = table === "" ? "" : `${table}.`
  return `${t}seq IN (SELECT ${rowidSql("i.value")} FROM (${ids}) i
      UNION ALL SELECT d.seq FROM roster_executions d WHERE d.seq < ${displacedBelow} AND d.id IN (${ids}))
    AND ${t}id IN (${ids})`
}

/** {@link inIdsSql} of a JSON array of ids (an SQL expression). */
export const inJsonIdsSql = (json: string, table = ""): string => inIdsSql(`SELECT value FROM json_each(${json})`, table)
