/**
 * The one place Roster reads its environment: the `ROSTER_*` variables, read through
 * Effect's `Config` from a `ConfigProvider` over the process environment. What the
 * values may be, and the one-line refusals naming a variable, are ConfigRules.ts's; this
 * module only says which variables are set and to what text, exactly as written.
 */
import { Config, ConfigProvider, Effect, Option } from "effect"

/** The text of each variable that is set (even to ""), by name. */
export type Env = ReadonlyMap<string, string>

/**
 * Reads `names` at once. A fresh `ConfigProvider.fromEnv()` on each read, not the default
 * `ConfigProvider` reference: that one copies the environment once per process, and a
 * config completed later (`Roster.open` after the app set a variable) must see it as it is.
 */
export const read = (names: Iterable<string>): Effect.Effect<Env> =>
  Effect.suspend(() => {
    const provider = ConfigProvider.fromEnv({ preserveEmptyStrings: true })
    return Effect.forEach(names, (name) =>
      Config.option(Config.String(name)).parse(provider).pipe(
        Effect.map((value) => [name, Option.getOrUndefined(value)] as const)
      ))
  }).pipe(
    Effect.map((pairs) => new Map(pairs.filter((p): p is readonly [string, string] => p[1] !== undefined))),
    // A missing variable is None, and any text is a String: over the process environment this cannot fail.
    Effect.orDie
  )

/** The text of one variable, when it is set. */
export const text = (name: string): Effect.Effect<string | undefined> => Effect.map(read([name]), (env) => env.get(name))
