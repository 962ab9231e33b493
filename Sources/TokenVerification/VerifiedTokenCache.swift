import AuthToken
import Crypto
import Foundation

/// A bounded cache from the SHA-256 of a whole token to its verified claims and the key that verified it.
///
/// An entry is used only while its times still pass the verifier's checks (so never after `exp`) and its key
/// is still published; otherwise it is dropped. When full, the oldest entry goes.
final class VerifiedTokenCache: Sendable {
    struct Entry: Sendable {
        let claims: VerifiedClaims
        /// `nil` for a token verified with the configured HMAC secret.
        let key: JWK?
        /// The token's `exp`, `nbf` and `iat`: all a hit checks again, since the other checks cannot change.
        let times: ClaimTimes
    }

    private struct State {
        var entries: [SHA256Digest: Entry] = [:]
        /// The digests in insertion order, a ring of `capacity` slots: an insert overwrites the oldest slot
        /// and evicts its entry. A removed entry leaves its digest behind, and a re-inserted token may hold two
        /// slots; evicting through the older one then only drops it early, and never lets the count pass the
        /// capacity, since every entry holds a slot.
        var ring: [SHA256Digest?] = []
        var next = 0
    }

    let capacity: Int
    private let state = LockedValue(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { state.withLock { $0.entries.count } }

    func entry(for digest: SHA256Digest) -> Entry? {
        state.withLock { $0.entries[digest] }
    }

    func remove(_ digest: SHA256Digest) {
        _ = state.withLock { $0.entries.removeValue(forKey: digest) }
    }

    func insert(_ entry: Entry, for digest: SHA256Digest) {
        guard capacity > 0 else { return }
        state.withLock { state in
            guard state.entries.updateValue(entry, forKey: digest) == nil else { return }
            if state.ring.count < capacity {
                state.ring.append(digest)
                return
            }
            if let oldest = state.ring[state.next] { state.entries.removeValue(forKey: oldest) }
            state.ring[state.next] = digest
            state.next = state.next + 1 == capacity ? 0 : state.next + 1
        }
    }
}
