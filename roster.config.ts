/**
 * This repository's own config: the demo app, on `roster.db` in the working
 * directory. ROSTER_DB and ROSTER_APPS_DIR override it.
 */
import { defineConfig } from "./src/index.ts"

export default defineConfig({
  db: "roster.db",
  appsDir: "examples/demo/apps",
  queues: { default: { concurrency: 10 } }
})
