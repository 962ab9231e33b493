import Logging

/// A log handler at `.trace` that renders each event as one line (level, label, `[source]`, message, then
/// metadata sorted by key) and hands it to `sink`.
struct LineHandler: LogHandler {
    let label: String
    let sink: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        let rendered = merged.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " ")
        sink("\(event.level) \(label) [\(event.source)] \(event.message) \(rendered)")
    }
}
