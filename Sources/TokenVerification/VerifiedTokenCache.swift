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
        var order: [SHA256Digest] = []
        var head = 0
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
            state.order.append(digest)
            // Evict the oldest live entries (removed ones leave stale digests in `order`, skipped here).
            while state.entries.count > capacity, state.head < state.order.count {
                state.entries.removeValue(forKey: state.order[state.head])
                state.head += 1
            }
            // Compact the queue once half of it is consumed or stale.
            if state.order.count > 2 * capacity + 16 || state.head > state.order.count / 2 {
                state.order = state.order[state.head...].filter { state.entries[$0] != nil }
                state.head = 0
            }
        }
    }
}
