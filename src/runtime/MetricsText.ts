/**
 * Renders Effect metric snapshots (`Metric.snapshot`) in the Prometheus text
 * exposition format (version 0.0.4): one `# HELP` and `# TYPE` per metric name, then
 * one sample per series, its attributes as labels. Counters and gauges are one sample;
 * histograms are cumulative `_bucket{le=…}` samples ending with `+Inf`, then `_sum`
 * and `_count`; summaries are `{quantile=…}` samples with `_sum` and `_count`;
 * frequencies become counters with a `key` label.
 */
import type { Metric } from "effect"

/** A metric name made valid for Prometheus (`[a-zA-Z_:][a-zA-Z0-9_:]*`). */
export const metricName = (id: string): string => {
  const name = id.replace(/[^a-zA-Z0-9_:]/g, "_")
  return /^[a-zA-Z_:]/.test(name) ? name : `_${name}`
}

const labelName = (key: string): string => {
  const name = key.replace(/[^a-zA-Z0-9_]/g, "_")
  return /^[a-zA-Z_]/.test(name) ? name : `_${name}`
}

const escapeLabel = (value: string): string => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const escapeHelp = (value: string): string => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")

/** A sample value: integers as is, +Inf/-Inf/NaN spelled the Prometheus way. */
export const sampleValue = (n: number | bigint): string => {
  if (typeof n === "bigint") return n.toString()
  if (Number.isNaN(n)) return "NaN"
  if (n === Number.POSITIVE_INFINITY) return "+Inf"
  if (n === Number.NEGATIVE_INFINITY) return "-Inf"
  return String(n)
}

const labels = (attributes: Metric.Metric.AttributeSet | undefined, extra: ReadonlyArray<readonly [string, string]> = []): string => {
  const pairs = [...Object.entries(attributes ?? {}).sort(([a], [b]) => a.localeCompare(b)), ...extra]
  return pairs.length === 0 ? "" : `{${pairs.map(([k, v]) => `${labelName(k)}="${escapeLabel(String(v))}"`).join(",")}}`
}

const typeOf: Record<Metric.Metric.Snapshot["type"], string> = {
  Counter: "counter",
  Gauge: "gauge",
  Frequency: "counter",
  Histogram: "histogram",
  Summary: "summary"
}

const samples = (name: string, s: Metric.Metric.Snapshot): Array<string> => {
  switch (s.type) {
    case "Counter":
      return [`${name}${labels(s.attributes)} ${sampleValue(s.state.count)}`]
    case "Gauge":
      return [`${name}${labels(s.attributes)} ${sampleValue(s.state.value)}`]
    case "Frequency":
      return [...s.state.occurrences].map(([key, n]) => `${name}${labels(s.attributes, [["key", key]])} ${sampleValue(n)}`)
    case "Histogram": {
      const finite = s.state.buckets.filter(([le]) => Number.isFinite(le))
      return [
        ...finite.map(([le, n]) => `${name}_bucket${labels(s.attributes, [["le", sampleValue(le)]])} ${sampleValue(n)}`),
        `${name}_bucket${labels(s.attributes, [["le", "+Inf"]])} ${sampleValue(s.state.count)}`,
        `${name}_sum${labels(s.attributes)} ${sampleValue(s.state.sum)}`,
        `${name}_count${labels(s.attributes)} ${sampleValue(s.state.count)}`
      ]
    }
    case "Summary":
      return [
        ...s.state.quantiles.map(([q, v]) => `${name}${labels(s.attributes, [["quantile", sampleValue(q)]])} ${v === undefined ? "NaN" : sampleValue(v)}`),
        `${name}_sum${labels(s.attributes)} ${sampleValue(s.state.sum)}`,
        `${name}_count${labels(s.attributes)} ${sampleValue(s.state.count)}`
      ]
  }
}

/** The exposition text of a set of snapshots, grouped by metric name in name order. */
export const render = (snapshots: ReadonlyArray<Metric.Metric.Snapshot>): string => {
  const byName = new Map<string, Array<Metric.Metric.Snapshot>>()
  for (const s of snapshots) {
    const name = metricName(s.id)
    const group = byName.get(name)
    if (group) group.push(s)
    else byName.set(name, [s])
  }
  const out: Array<string> = []
  for (const name of [...byName.keys()].sort()) {
    const group = byName.get(name)!
    const first = group[0]!
    if (first.description) out.push(`# HELP ${name} ${escapeHelp(first.description)}`)
    out.push(`# TYPE ${name} ${typeOf[first.type]}`)
    for (const s of group) if (s.type === first.type) out.push(...samples(name, s))
  }
  return out.length === 0 ? "" : out.join("\n") + "\n"
}
