import AuthToken
import Foundation
import Logging
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The names in a directory, sorted.
func directoryNames(_ url: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).sorted()
}

/// The permission bits of a path.
func permissions(_ path: String) -> UInt32 {
    var info = stat()
    guard lstat(path, &info) == 0 else { return 0 }
    return UInt32(info.st_mode) & 0o777
}

/// A session whose every field follows from `generation` (the probe builds the same ones).
func probeSession(generation: UInt64, scope: String? = nil) -> StoredSession {
    let padding = String(repeating: "x", count: 64 + Int(generation % 512))
    let token = TestSecrets.shared.register(
        AuthToken(
            accessToken: "access-\(generation)-\(padding)", refreshToken: "refresh-\(generation)", scope: scope,
            receivedAt: Date(timeIntervalSince1970: Double(generation)), lifetime: 3600))
    return StoredSession(token: token, userID: "user-\(generation)", generation: generation)
}

/// A small session with recognisable token text.
func sampleSession(generation: UInt64, userID: String? = "user-1") -> StoredSession {
    StoredSession(
        token: TestSecrets.shared.register(
            AuthToken(
                accessToken: "secret-access-\(generation)", refreshToken: "secret-refresh-\(generation)",
                receivedAt: Date(timeIntervalSince1970: 1_700_000_000), lifetime: 900)),
        userID: userID, generation: generation)
}
