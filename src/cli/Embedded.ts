/**
 * What a binary made by `roster build` carries besides the runtime: the project's
 * roster.config.ts as it was at build time and the apps' modules, both imported
 * statically by the generated entry (a compiled binary cannot resolve the packages of
 * modules it would load from disk). The CLI takes config and apps from here instead of
 * the disk; absent, the default, when the CLI runs from source.
 */
import { Context } from "effect"
import type { EmbeddedApps } from "../jobs/Discovery.ts"
import type { RosterConfig } from "../runtime/Config.ts"

/** A project baked into a binary. */
export interface EmbeddedProject {
  /** roster.config.ts's default export at build time (`{}` without one); ROSTER_* and flags still apply at run time. */
  readonly config: RosterConfig
  readonly apps: EmbeddedApps
}

/** The project this process was built with, if it is a `roster build` binary. */
export const Embedded = Context.Reference<EmbeddedProject | undefined>("roster/cli/Embedded", { defaultValue: () => undefined })
