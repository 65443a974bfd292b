/**
 * The README and docs/ stay true to the code (issue 8): every TypeScript block of the
 * README is a file under examples/readme verbatim (so tsc checks it and
 * tests/process/examples.test.ts runs it), every relative link of the README and of
 * docs/*.md points at a file that exists (and at a heading that exists, for `#anchors`
 * into Markdown), and every docs page is linked from the README.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { repoRoot } from "../support/processes.ts"

const readme = readFileSync(join(repoRoot, "README.md"), "utf8")
const docsDir = join(repoRoot, "docs")
const docPages = readdirSync(docsDir).filter((f) => f.endsWith(".md")).sort()

/** Fenced blocks of a Markdown text with their info string. */
const fencedBlocks = (markdown: string): Array<{ lang: string; body: string }> =>
  [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, body: m[2]! }))

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string): string =>
  heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-")

/** Relative link targets of a Markdown text (outside fenced blocks). */
const relativeLinks = (markdown: string): Array<string> =>
  [...markdown.replace(/^```[\s\S]*?^```$/gm, "").matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target))

const headingsOf = (file: string): Set<string> =>
  new Set([...readFileSync(file, "utf8").replace(/^```[\s\S]*?^```$/gm, "").matchAll(/^#+ (.+)$/gm)].map((m) => slug(m[1]!)))

describe("README", () => {
  test("every TypeScript block is the file under examples/readme its first line names, verbatim", () => {
    const blocks = fencedBlocks(readme).filter((b) => b.lang === "ts")
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    for (const block of blocks) {
      const path = /^\/\/ (\S+)/.exec(block.body)?.[1]
      expect(path, `a ts block must start with "// <path under examples/readme>":\n${block.body}`).toBeDefined()
      const file = join(repoRoot, "examples/readme", path!)
      expect(existsSync(file), `${relative(repoRoot, file)} is missing`).toBe(true)
      expect(block.body, `README block differs from ${relative(repoRoot, file)}`).toBe(readFileSync(file, "utf8"))
    }
  })

  test("links every docs page", () => {
    const linked = new Set(relativeLinks(readme).map((t) => t.split("#")[0]!))
    for (const page of docPages) expect(linked.has(`docs/${page}`), `README does not link docs/${page}`).toBe(true)
  })
})

describe("relative links", () => {
  const files = ["README.md", ...docPages.map((p) => `docs/${p}`), "examples/http-app/README.md"]
  for (const file of files) {
    test(`${file}: every relative link and anchor resolves`, () => {
      const from = join(repoRoot, file)
      for (const target of relativeLinks(readFileSync(from, "utf8"))) {
        const [path, anchor] = target.split("#") as [string, string | undefined]
        const resolved = path === "" ? from : join(dirname(from), path)
        expect(existsSync(resolved), `${file} links to ${target}: no such file`).toBe(true)
        if (anchor !== undefined && resolved.endsWith(".md")) {
          expect(headingsOf(resolved).has(anchor), `${file} links to ${target}: no such heading`).toBe(true)
        }
      }
    })
  }
})
