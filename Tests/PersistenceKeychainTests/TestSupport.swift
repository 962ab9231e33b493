import AuthToken
import Foundation
import Persistence
import TokenKitLogCheck

/// A directory under the system's temporary directory, removed by `remove()`.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokenkit-keychain-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// A session whose secrets are registered for the log leak check.
func keychainTestSession(_ name: String, generation: UInt64, userID: String? = "user-1") -> StoredSession {
    let token = TestSecrets.shared.register(
        AuthToken(
            accessToken: "kc-access-\(name)-\(generation)-q8", refreshToken: "kc-refresh-\(name)-\(generation)-q8",
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000), lifetime: 3600))
    return StoredSession(token: token, userID: userID, generation: generation)
}

extension TokenStoreRead {
    var session: StoredSession? {
        if case .found(let session) = self { return session }
        return nil
    }
    var isAbsent: Bool {
        if case .absent = self { return true }
        return false
    }
    var error: PersistenceError? {
        if case .unavailable(let error) = self { return error }
        return nil
    }
}
