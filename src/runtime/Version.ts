/**
 * Roster's version, as a worker records it in its live-worker row. Written here rather
 * than read from package.json so that a compiled binary carries it too.
 */

/** This build's version (package.json's `version`). */
export const rosterVersion = "0.1.0"
