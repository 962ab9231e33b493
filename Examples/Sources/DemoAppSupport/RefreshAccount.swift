public import DemoAuthServer

/// What the server's own issue log says about one login's refreshes: each refresh should come after the access
/// token before it expired. Counting against the expiries that actually elapsed (rather than against the rounds a
/// demo planned) keeps a slow machine, whose requests outlive a token, from turning a correct run red, while a
/// refresh made while the token was still valid (a wasted one) still does.
public struct RefreshAccount: Sendable, Equatable, CustomStringConvertible {
    /// Refreshes in the window.
    public var refreshes = 0
    /// Refreshes that followed the expiry of the token before them: the expiries that elapsed and were renewed.
    public var afterExpiry = 0

    /// Refreshes made while the previous access token was still valid: a broken single flight.
    public var early: Int { refreshes - afterExpiry }

    /// Counts the refreshes of `family` after its first `skipping` records.
    ///
    /// A token is refused from its `exp` second on, and the log keeps the precise issue time, so a refresh
    /// issued at or after the previous token's `exp` follows its expiry.
    ///
    /// - Parameters:
    ///   - log: The server's issue log.
    ///   - family: The login's family, as the log names it.
    ///   - skipping: How many of the family's records to leave out (those before the window).
    public init(log: [DemoAuthServer.IssueRecord], family: String, skipping: Int = 0) {
        let records = log.filter { $0.family == family }
        for index in records.indices.dropFirst(max(1, skipping)) where records[index].grant == .refresh {
            refreshes += 1
            if records[index].issuedAt >= Double(records[index - 1].expiresAt) { afterExpiry += 1 }
        }
    }

    /// Counts the records of `family` in `log`, to skip them later.
    ///
    /// - Parameters:
    ///   - log: The server's issue log.
    ///   - family: The login's family.
    /// - Returns: How many records it has.
    public static func records(in log: [DemoAuthServer.IssueRecord], family: String) -> Int {
        log.count { $0.family == family }
    }

    /// `N refresh(es), M after an expiry`.
    public var description: String {
        "\(refreshes) refresh(es) for \(afterExpiry) elapsed expir\(afterExpiry == 1 ? "y" : "ies")"
    }
}
