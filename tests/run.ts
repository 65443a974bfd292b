/**
 * `npm test`: the type-check (`tsc --noEmit`) and `bun test` side by side, not one after
 * the other. tsc is one thread for about 40 s; run first, it left the second core idle
 * for all that time. Arguments are passed to `bun test` (`npm test -- tests/jobs` runs
 * one folder), the type-check always covers the whole project. tsc's output is printed
 * when it ends, as one block, so it never interleaves with the tests' lines. The exit
 * code is non-zero when either fails.
 */
import { join, resolve } from "node:path"

const root = resolve(import.meta.dir, "..")

const typecheck = Bun.spawn([join(root, "node_modules/.bin/tsc"), "--noEmit", "-p", root], {
  cwd: root,
  stdout: "pipe",
  stderr: "pipe"
})
const typecheckOutput = Promise.all([new Response(typecheck.stdout).text(), new Response(typecheck.stderr).text()])

const tests = Bun.spawn(
  [process.execPath, "test", "--parallel=3", "--timings=tests/timings.json", "--timeout", "120000", ...process.argv.slice(2)],
  { cwd: root, stdio: ["inherit", "inherit", "inherit"] }
)

const [typecheckCode, testsCode, [out, err]] = await Promise.all([typecheck.exited, tests.exited, typecheckOutput])
const text = (out + err).trimEnd()
if (typecheckCode === 0) {
  process.stdout.write("typecheck (tsc --noEmit): no errors\n")
} else {
  process.stderr.write(`${text}\ntypecheck (tsc --noEmit) failed: exit ${typecheckCode}\n`)
}
process.exit(typecheckCode !== 0 ? typecheckCode : testsCode ?? 1)
