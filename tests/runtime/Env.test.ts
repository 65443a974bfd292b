/**
 * ROSTER_* variables are read in one place (src/runtime/Env.ts, through Effect's
 * Config), at the time a config is completed, not once per process; the refusals still
 * name the variable and its text.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import * as Config from "../../src/runtime/Config.ts"
import { readEnvSetting } from "../../src/runtime/ConfigRules.ts"

const touched = ["ROSTER_DB", "ROSTER_SYNCHRONOUS", "ROSTER_LEASE_MS", "ROSTER_IDLE_HORIZON_MS"]
afterEach(() => {
  for (const name of touched) delete process.env[name]
})

const refusal = (effect: Effect.Effect<unknown, { readonly message: string }>) => Effect.runPromise(Effect.map(Effect.flip(effect), (e) => e.message))

describe("the environment is read when a config is completed", () => {
  test("a variable set after an earlier read is seen by the next one", async () => {
    expect((await Effect.runPromise(Config.applyEnv({ db: "a.db" }))).db).toBe("a.db")
    process.env.ROSTER_DB = "b.db"
    expect((await Effect.runPromise(Config.applyEnv({ db: "a.db" }))).db).toBe("b.db")
    // Empty means unset, as before.
    process.env.ROSTER_DB = ""
    expect((await Effect.runPromise(Config.applyEnv({ db: "a.db" }))).db).toBe("a.db")
  })

  test("refusals name the variable and its text", async () => {
    process.env.ROSTER_SYNCHRONOUS = "OFF"
    expect(await refusal(Config.applyEnv({}))).toBe(`ROSTER_SYNCHRONOUS must be FULL or NORMAL, got "OFF"`)
    delete process.env.ROSTER_SYNCHRONOUS
    process.env.ROSTER_LEASE_MS = " 5s"
    expect(await refusal(Config.applyEnv({}))).toBe(`ROSTER_LEASE_MS must be a whole number of milliseconds from 200 to 2147483647, got " 5s"`)
    process.env.ROSTER_IDLE_HORIZON_MS = "-1"
    expect(await refusal(readEnvSetting("ROSTER_IDLE_HORIZON_MS"))).toBe(`ROSTER_IDLE_HORIZON_MS must be a whole number of milliseconds from 0 to 2147483647, got "-1"`)
  })

  test("an unset variable is its default", async () => {
    expect(await Effect.runPromise(readEnvSetting("ROSTER_IDLE_HORIZON_MS"))).toBe(5_000)
  })
})
