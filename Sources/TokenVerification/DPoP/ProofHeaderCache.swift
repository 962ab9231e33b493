import AuthToken

/// The DPoP proof headers a verifier accepted, by their base64url text: the algorithm and the parsed key, so a
/// client's next proof (same header, new claims) costs no JSON parse, key decoding or thumbprint. Bounded: when
/// full, it starts over.
final class ProofHeaderCache: Sendable {
    private let capacity: Int
    private let entries = LockedValue([String: (JWSAlgorithm, JWK)]())

    init(capacity: Int) {
        self.capacity = capacity
    }

    func entry(for segment: String) -> (JWSAlgorithm, JWK)? {
        entries.withLock { $0[segment] }
    }

    func insert(_ entry: (JWSAlgorithm, JWK), for segment: String) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[segment] = entry
        }
    }
}
