/**
 * Queues are named, kebab-case, and declared in config with a per-worker-process
 * concurrency. `default` always exists.
 */

/** The declared shape of one queue. */
export interface QueueConfig {
  readonly name: string
  /** How many executions of this queue one worker process runs at once. */
  readonly concurrency: number
}

/** Concurrency of `default` when the config does not declare it. */
export const defaultConcurrency = 10

/** Normalises the config's queue map, adding `default` when absent. */
export const fromConfig = (queues: Readonly<Record<string, { readonly concurrency?: number }>> | undefined): ReadonlyArray<QueueConfig> => {
  const out = new Map<string, QueueConfig>()
  out.set("default", { name: "default", concurrency: defaultConcurrency })
  for (const [name, q] of Object.entries(queues ?? {})) {
    out.set(name, { name, concurrency: q.concurrency ?? defaultConcurrency })
  }
  return [...out.values()]
}
