import Crypto

/// A bounded map from a token's SHA-256 to a value with an expiry (a duration on the owner's clock). When full, the
/// oldest insertion goes; an expired entry is dropped when it is looked up. Not thread-safe: the owner locks it.
struct BoundedCache<Value> {
    private struct Entry {
        let value: Value
        let until: Duration
    }

    let capacity: Int
    private var entries: [SHA256Digest: Entry] = [:]
    /// The digests in insertion order, a ring of `capacity` slots; see ``VerifiedTokenCache`` for why a stale slot
    /// is harmless.
    private var ring: [SHA256Digest?] = []
    private var next = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { entries.count }

    /// The value for `digest` if it is still valid at `now`; an expired one is removed.
    mutating func value(for digest: SHA256Digest, at now: Duration) -> Value? {
        guard let entry = entries[digest] else { return nil }
        guard now < entry.until else {
            entries.removeValue(forKey: digest)
            return nil
        }
        return entry.value
    }

    mutating func insert(_ value: Value, for digest: SHA256Digest, until: Duration) {
        guard capacity > 0 else { return }
        guard entries.updateValue(Entry(value: value, until: until), forKey: digest) == nil else { return }
        if ring.count < capacity {
            ring.append(digest)
            return
        }
        if let oldest = ring[next], oldest != digest { entries.removeValue(forKey: oldest) }
        ring[next] = digest
        next = next + 1 == capacity ? 0 : next + 1
    }
}
