package import Foundation

/// Parses `Retry-After` (RFC 9110 section 10.2.3): delta-seconds or an HTTP date.
package enum RetryAfter {
    /// The longest wait a server may ask for; longer values are clamped.
    static let maximum: Duration = .seconds(86_400)

    /// The wait `value` asks for at `now`, or `nil` when it is absent or unreadable.
    ///
    /// - Parameters:
    ///   - value: The header value.
    ///   - now: The current wall-clock time, for an HTTP date.
    /// - Returns: The wait, never negative, at most one day.
    package static func parse(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty, value.utf8.count <= 64 else {
            return nil
        }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            guard let seconds = Int64(value) else { return maximum }
            return min(.seconds(seconds), maximum)
        }
        guard let date = HTTPDate.parse(value) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds.isFinite else { return nil }
        return min(.seconds(max(0, seconds)), maximum)
    }
}
