package import Foundation

/// The HTTP `Date` format (RFC 9110 section 5.6.7, IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`).
package enum HTTPDate {
    /// The date `value` names, or `nil` when it is absent, too long or not an IMF-fixdate.
    ///
    /// - Parameter value: A header value.
    /// - Returns: The date.
    package static func parse(_ value: String?) -> Date? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty, value.utf8.count <= 64 else {
            return nil
        }
        guard let date = formatter().date(from: value), date.timeIntervalSince1970.isFinite else { return nil }
        return date
    }

    /// `date` as an IMF-fixdate, whole seconds (truncated), in GMT.
    ///
    /// - Parameter date: The date.
    /// - Returns: The header value.
    package static func format(_ date: Date) -> String {
        formatter().string(from: Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)))
    }

    /// A new formatter each time: `DateFormatter` is not `Sendable`, and a `Date` header is read once per answer.
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }
}
