/** The write lock outcome-thread.ts and its writer share: one word, 0 free, 1 held. */
export const acquire = (word: Int32Array): void => {
  while (Atomics.compareExchange(word, 0, 0, 1) !== 0) Atomics.wait(word, 0, 1)
}
export const release = (word: Int32Array): void => {
  Atomics.store(word, 0, 0)
  Atomics.notify(word, 0, 1)
}
