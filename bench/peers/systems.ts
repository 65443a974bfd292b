/**
 * Every system the comparison knows, in table order, each loaded on demand so a child
 * process imports only the client library it measures.
 */
import type { System } from "./common.ts"

export interface Entry {
  readonly id: string
  readonly load: () => Promise<System>
}

export const entries: ReadonlyArray<Entry> = [
  { id: "sqlite-limit", load: async () => (await import("./limit.ts")).sqliteLimit },
  { id: "roster-sqlite-full", load: async () => (await import("./roster.ts")).rosterSqliteFull },
  { id: "roster-sqlite-normal", load: async () => (await import("./roster.ts")).rosterSqliteNormal },
  { id: "plainjob", load: async () => (await import("./plainjob.ts")).plainjob },
  { id: "bullmq", load: async () => (await import("./bullmq.ts")).bullmq },
  { id: "roster-pg", load: async () => (await import("./roster.ts")).rosterPostgres },
  { id: "pg-boss", load: async () => (await import("./pgboss.ts")).pgboss },
  { id: "pg-boss-notify", load: async () => (await import("./pgboss.ts")).pgbossNotify },
  { id: "graphile-worker", load: async () => (await import("./graphile.ts")).graphile }
]
