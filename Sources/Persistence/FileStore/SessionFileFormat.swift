import AuthToken
import Crypto
import Foundation

/// The on-disk format of a ``FileTokenStore`` session file, version 1.
///
/// Plain: `{"formatVersion":1,"session":{...StoredSession...}}`.
/// Encrypted: `{"formatVersion":1,"sealed":{"algorithm":"AES-GCM","keyCheck":"...","box":"..."}}`, where `box`
/// is the base64 of the AES-GCM combined representation (nonce, ciphertext, tag) of the plain session JSON,
/// authenticated together with the file's name (so a file copied to another account does not open), and
/// `keyCheck` is a short HMAC of a constant under the key, which tells a wrong key apart from damaged bytes.
struct SessionFileFormat: Sendable {
    /// The newest format this code writes and reads.
    static let currentVersion = 1
    static let algorithm = "AES-GCM"

    /// What decoding a file's bytes found.
    enum Decoded {
        case session(StoredSession)
        case corrupt(String)
        case unsupportedVersion(Int)
        case wrongKey(String)
    }

    private struct VersionHeader: Decodable {
        let formatVersion: Int
    }
    private struct Envelope: Codable {
        let formatVersion: Int
        var session: StoredSession?
        var sealed: Sealed?
    }
    private struct Sealed: Codable {
        let algorithm: String
        let keyCheck: String
        let box: String
    }

    let key: SymmetricKey?
    /// Bound into the encryption as authenticated data: the file's name (a keyed hash of the account).
    let binding: String

    func encode(_ session: StoredSession) throws(PersistenceError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            var envelope = Envelope(formatVersion: Self.currentVersion)
            if let key {
                let plain = try encoder.encode(session)
                let box = try AES.GCM.seal(plain, using: key, authenticating: Data(authenticatedData.utf8))
                guard let combined = box.combined else { throw PersistenceError.writeFailed }
                envelope.sealed = Sealed(
                    algorithm: Self.algorithm, keyCheck: Self.keyCheck(key), box: combined.base64EncodedString())
            } else {
                envelope.session = session
            }
            return Array(try encoder.encode(envelope))
        } catch {
            throw PersistenceError.writeFailed.with(detail: "encoding the session failed")
        }
    }

    func decode(_ bytes: [UInt8]) -> Decoded {
        let data = Data(bytes)
        let decoder = JSONDecoder()
        // The common case decodes once; only a file that does not decode is examined for its version.
        guard let envelope = try? decoder.decode(Envelope.self, from: data) else {
            guard let header = try? decoder.decode(VersionHeader.self, from: data) else {
                return .corrupt(bytes.isEmpty ? "empty file" : "no format version")
            }
            if header.formatVersion > Self.currentVersion { return .unsupportedVersion(header.formatVersion) }
            return .corrupt("unexpected shape")
        }
        if envelope.formatVersion > Self.currentVersion { return .unsupportedVersion(envelope.formatVersion) }
        guard envelope.formatVersion >= 1 else { return .corrupt("format version \(envelope.formatVersion)") }
        switch (envelope.session, envelope.sealed, key) {
        case (let session?, nil, nil):
            return .session(session)
        case (_?, nil, _?):
            return .wrongKey("the file is not encrypted but the store has a key")
        case (nil, _?, nil):
            return .wrongKey("the file is encrypted but the store has no key")
        case (nil, let sealed?, let key?):
            guard sealed.algorithm == Self.algorithm else { return .corrupt("unknown algorithm") }
            guard sealed.keyCheck == Self.keyCheck(key) else { return .wrongKey("key check differs") }
            guard let combined = Data(base64Encoded: sealed.box),
                let box = try? AES.GCM.SealedBox(combined: combined),
                let plain = try? AES.GCM.open(box, using: key, authenticating: Data(authenticatedData.utf8))
            else { return .corrupt("sealed box does not open") }
            guard let session = try? decoder.decode(StoredSession.self, from: plain) else {
                return .corrupt("unexpected shape inside the sealed box")
            }
            return .session(session)
        default:
            return .corrupt("neither a session nor a sealed box")
        }
    }

    private var authenticatedData: String { "TokenKit.FileTokenStore.v\(Self.currentVersion)|\(binding)" }

    /// 8 bytes of HMAC-SHA256 of a constant under `key`, base64: enough to tell keys apart, useless to an attacker.
    static func keyCheck(_ key: SymmetricKey) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("TokenKit.FileTokenStore.key-check".utf8), using: key)
        return Data(Array(code).prefix(8)).base64EncodedString()
    }

    /// The file name for an account: an HMAC-SHA256 of the account under the store's naming key
    /// (``NamingKey``), so any account string is a safe file name and a directory listing does not confirm a
    /// guessed account.
    static func fileName(account: String, key: SymmetricKey) -> String {
        name(HMAC<SHA256>.authenticationCode(for: Data(account.utf8), using: key))
    }

    /// The name earlier versions gave an account's file: a plain SHA-256 of the account. Read, then renamed.
    static func legacyFileName(account: String) -> String {
        name(SHA256.hash(data: Data(account.utf8)))
    }

    private static func name(_ digest: some Sequence<UInt8>) -> String {
        "session-\(HexEncoding.encode(digest)).json"
    }
}
