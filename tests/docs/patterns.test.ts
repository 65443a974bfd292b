/**
 * docs/patterns.md's workflow examples stay true to the code: every TypeScript block of
 * its "Workflows inside one execution" section is in examples/workflows/workflows.ts
 * verbatim, which tsc checks and examples/workflows/workflows.test.ts runs.
 */
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { repoRoot } from "../support/processes.ts"

test("every workflow block of docs/patterns.md is in examples/workflows/workflows.ts verbatim", () => {
  const doc = readFileSync(join(repoRoot, "docs/patterns.md"), "utf8")
  const section = doc.slice(doc.indexOf("## Workflows inside one execution"))
  const source = readFileSync(join(repoRoot, "examples/workflows/workflows.ts"), "utf8")
  const blocks = [...section.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  expect(blocks.length).toBe(3)
  for (const block of blocks) expect(source).toContain(block)
})
