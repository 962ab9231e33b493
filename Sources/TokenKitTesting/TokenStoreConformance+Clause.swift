extension TokenStoreConformance {
    /// One promise of the store contract, as ``TokenStoreConformance`` checks it.
    public struct Clause: Sendable, Hashable, CustomStringConvertible {
        /// A short name, such as `exclusion`.
        package let name: String
        /// The promise, in one sentence.
        package let statement: String

        private init(_ name: String, _ statement: String) {
            self.name = name
            self.statement = statement
        }

        /// A saved session loads as found, with what was saved, on every handle; an account with nothing saved,
        /// or whose session was removed, loads as absent (not unavailable).
        package static let load = Clause(
            "load",
            "load(account:) reports a saved session as found, as saved, on every handle, and no session as absent")
        /// A save or removal happens only when its condition holds for the generation and session identity stored
        /// now; otherwise it throws `PersistenceError.conflict` and changes nothing, so a write never lands after a
        /// newer generation or on another session, and a removed session never comes back.
        package static let conditionalWrites = Clause(
            "conditionalWrites",
            "save and remove happen only when their condition holds for the generation and session identity stored "
                + "now; otherwise they throw PersistenceError.conflict and change nothing")
        /// A removal conditional on a session at any generation (`WriteCondition.sessionAtAnyGeneration(_:)`, a
        /// sign-out's) removes that session whatever generation it has reached and succeeds when nothing is stored;
        /// when another session is stored it throws `PersistenceError.conflict` and leaves it.
        package static let removalOfASessionAtAnyGeneration = Clause(
            "removalOfASessionAtAnyGeneration",
            "a removal conditional on a session at any generation removes that session at whatever generation it "
                + "has reached, succeeds when nothing is stored, and throws PersistenceError.conflict when another "
                + "session is stored, leaving it")
        /// Removing a session that is not there succeeds.
        package static let removingAnAbsentSession = Clause(
            "removingAnAbsentSession", "removing a session that is not there succeeds")
        /// While a body of `withExclusiveAccess` runs, no body for the same account starts on another handle, even
        /// when connections or the database behind the store are lost and come back meanwhile.
        package static let exclusion = Clause(
            "exclusion",
            "while a body of withExclusiveAccess runs, no body for the same account starts on another handle")
        /// A save from inside the body lands (the store retries a transient failure within a bound), and the next
        /// holder reads it.
        package static let saveInsideExclusiveAccess = Clause(
            "saveInsideExclusiveAccess",
            "a save from inside the body lands, retried by the store if it failed transiently, and the next "
                + "holder reads it")
        /// `withExclusiveAccess` returns what its body returns and rethrows what it throws, and frees the account
        /// when the body ends, so a body waiting on another handle runs.
        package static let release = Clause(
            "release",
            "withExclusiveAccess returns what its body returns, rethrows what it throws, and frees the account "
                + "when the body ends")
        /// `withExclusiveAccess` called inside a body for the same account, on the same handle, runs at once
        /// instead of waiting for itself.
        package static let nestedExclusiveAccess = Clause(
            "nestedExclusiveAccess",
            "withExclusiveAccess inside a body for the same account on the same handle runs without deadlock")
        /// Exclusive access to one account does not hold up another account.
        package static let perAccountExclusion = Clause(
            "perAccountExclusion", "exclusive access to one account does not hold up another account")

        /// Every clause, in the order ``TokenStoreConformance/check(_:)`` checks them.
        public static let all: [Clause] = [
            .load, .conditionalWrites, .removalOfASessionAtAnyGeneration, .removingAnAbsentSession, .exclusion,
            .saveInsideExclusiveAccess, .release, .nestedExclusiveAccess, .perAccountExclusion,
        ]

        /// The clauses a store private to one client keeps, one whose `withExclusiveAccess` takes no lock (the
        /// protocol's default): every clause but `exclusion` and `saveInsideExclusiveAccess`.
        public static let unsharedStore: [Clause] = all.filter { $0 != .exclusion && $0 != .saveInsideExclusiveAccess }

        /// The name.
        public var description: String { name }

    }

    /// A broken clause of the store contract: which one, and what the check saw (never token text).
    public struct Violation: Error, Sendable, CustomStringConvertible {
        /// The clause the store broke.
        package let clause: Clause
        /// What the check saw.
        package let detail: String

        init(_ clause: Clause, _ detail: String) {
            self.clause = clause
            self.detail = detail
        }

        /// `TokenStore contract broken (<name>): <statement>. Seen: <detail>.`
        public var description: String {
            "TokenStore contract broken (\(clause.name)): \(clause.statement). Seen: \(detail)."
        }
    }
}
