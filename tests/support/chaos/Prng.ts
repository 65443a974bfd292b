/**
 * A small seeded pseudo-random generator (mulberry32), so a chaos run — which process
 * is killed, with which signal, after how long, and the mix of enqueued work — can be
 * replayed from its printed seed. (Process timing still differs between runs; the
 * decisions do not.)
 */

/** A seeded random source. */
export interface Prng {
  readonly seed: number
  /** A float in [0, 1). */
  readonly next: () => number
  /** An integer in [min, max], both included. */
  readonly int: (min: number, max: number) => number
  /** One element of a non-empty list. */
  readonly pick: <A>(items: ReadonlyArray<A>) => A
  /** A copy of a list in random order. */
  readonly shuffle: <A>(items: ReadonlyArray<A>) => Array<A>
}

/** A fresh seed from the system's randomness. */
export const randomSeed = (): number => Math.floor(Math.random() * 2 ** 32)

/** A generator from a 32-bit seed. */
export const make = (seed: number): Prng => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  const shuffle = <A>(items: ReadonlyArray<A>): Array<A> => {
    const out = [...items]
    for (let i = out.length - 1; i > 0; i--) {
      const j = int(0, i)
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }
  return { seed: seed >>> 0, next, int, pick: (items) => items[int(0, items.length - 1)]!, shuffle }
}
