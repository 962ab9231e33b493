// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Crypto
import Foundation
import Persistence

/// How a ``PostgresTokenStore`` row holds a session, format version 2 (version 1 is still read).
///
/// Plain: `payload` is the JSON of the `StoredSession` and `key_check` is `NULL`. Sealed: `payload` is the AES-GCM
/// combined representation (nonce, ciphertext, tag) of that JSON, authenticated together with the account, the
/// row's `generation` and its `session_id` (so a payload copied to another account's row, or an older payload put
/// back under the current generation, does not open), and `key_check` is 8 bytes of HMAC-SHA256 of a constant
/// under the key, base64, which tells a wrong key apart from damaged bytes. In version 2 the payload's generation
/// and identity must also equal the columns'. Version 1 (written before identities) binds the account only.
struct SessionRowFormat: Sendable {
    /// The newest format this code writes and reads.
    static let currentVersion: Int32 = 2

    let key: SymmetricKey?

    /// The `key_check` column this store writes and expects (`nil` without a key).
    let keyCheck: String?

    init(key: SymmetricKey?) {
        self.key = key
        self.keyCheck = key.map(Self.keyCheck)
    }

    /// The payload bytes for `session` in `account`'s row.
    func encode(_ session: StoredSession, account: String) throws(PersistenceError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            let plain = try encoder.encode(session)
            guard let key else { return Array(plain) }
            let box = try AES.GCM.seal(
                plain, using: key,
                authenticating: Self.authenticatedData(
                    account: account, version: Self.currentVersion, generation: session.generation,
                    sessionID: session.sessionID))
            guard let combined = box.combined else { throw PersistenceError.writeFailed }
            return Array(combined)
        } catch {
            throw PersistenceError.writeFailed.with(detail: "encoding the session failed")
        }
    }

    /// The session in a row, or why it cannot be read. The `generation` and `session_id` columns are authoritative.
    func decode(
        account: String, generation: UInt64, sessionID: String?, formatVersion: Int32,
        keyCheck storedKeyCheck: String?, payload: [UInt8]
    ) -> TokenStoreRead {
        if formatVersion > Self.currentVersion {
            return .unavailable(PersistenceError.unsupportedFormatVersion.with(detail: "row format \(formatVersion)"))
        }
        guard formatVersion >= 1 else {
            return .unavailable(PersistenceError.corrupt.with(detail: "row format \(formatVersion)"))
        }
        var plain = Data(payload)
        switch (storedKeyCheck, key) {
        case (nil, nil):
            break
        case (nil, _?):
            return .unavailable(
                PersistenceError.wrongKey.with(detail: "the row is not encrypted but the store has a key"))
        case (_?, nil):
            return .unavailable(PersistenceError.wrongKey.with(detail: "the row is encrypted but the store has no key"))
        case (let stored?, let key?):
            guard stored == keyCheck else {
                return .unavailable(PersistenceError.wrongKey.with(detail: "key check differs"))
            }
            guard let box = try? AES.GCM.SealedBox(combined: plain),
                let opened = try? AES.GCM.open(
                    box, using: key,
                    authenticating: Self.authenticatedData(
                        account: account, version: formatVersion, generation: generation, sessionID: sessionID))
            else { return .unavailable(PersistenceError.corrupt.with(detail: "sealed payload does not open")) }
            plain = opened
        }
        guard let session = try? JSONDecoder().decode(StoredSession.self, from: plain) else {
            return .unavailable(PersistenceError.corrupt.with(detail: "payload is not a session"))
        }
        if formatVersion >= 2, session.generation != generation || session.sessionID != sessionID {
            return .unavailable(PersistenceError.corrupt.with(detail: "payload does not match its row"))
        }
        return .found(
            StoredSession(
                token: session.token, userID: session.userID, generation: generation, sessionID: sessionID,
                dpopKey: session.dpopKey, serverTimeOffset: session.serverTimeOffset,
                recentServerFailures: session.recentServerFailures))
    }

    /// What a sealed payload is authenticated with: the account and, from version 2, the generation and identity.
    private static func authenticatedData(
        account: String, version: Int32, generation: UInt64, sessionID: String?
    ) -> Data {
        guard version >= 2 else { return Data("TokenKit.PostgresTokenStore.v1|\(account)".utf8) }
        let identity = sessionID.map { "s:" + $0 } ?? "none"
        return Data("TokenKit.PostgresTokenStore.v\(version)|\(account)|\(generation)|\(identity)".utf8)
    }

    /// 8 bytes of HMAC-SHA256 of a constant under `key`, base64: enough to tell keys apart, useless to an attacker.
    static func keyCheck(_ key: SymmetricKey) -> String {
        let code = HMAC<SHA256>.authenticationCode(
            for: Data("TokenKit.PostgresTokenStore.key-check".utf8), using: key)
        return Data(Array(code).prefix(8)).base64EncodedString()
    }

    /// A 64-bit advisory lock key for `account` in `table`: the first 8 bytes of a SHA-256 (an HMAC-SHA-256 keyed
    /// with `secret` when there is one), stable across processes and PostgreSQL versions (unlike `hashtext`, which
    /// is 32 bits and an implementation detail).
    static func lockKey(table: String, account: String, secret: SymmetricKey? = nil) -> Int64 {
        let input = Data("TokenKit.PostgresTokenStore.lock|\(table)|\(account)".utf8)
        let bytes: [UInt8] =
            if let secret {
                Array(HMAC<SHA256>.authenticationCode(for: input, using: secret))
            } else {
                Array(SHA256.hash(data: input))
            }
        var value: UInt64 = 0
        for byte in bytes.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int64(bitPattern: value)
    }
}
#endif
