import Foundation
import TokenKit

/// Stands for the iOS Keychain on Linux: generic-password items keyed by service and account, as Lume's
/// `KeychainTokenStorage` kept them with `SecItemAdd`, `SecItemCopyMatching` and `SecItemDelete`. On an Apple
/// platform the same calls go to `Security`; nothing else in the demo changes.
///
/// `@unchecked Sendable`: `items` is only touched while holding `lock`.
final class SimulatedKeychain: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String: [String: Data]] = [:]

    /// `SecItemAdd` (or `SecItemUpdate` when the item exists).
    func set(_ data: Data, service: String, account: String) {
        lock.withLock { items[service, default: [:]][account] = data }
    }

    /// `SecItemCopyMatching` with `kSecReturnData`.
    func data(service: String, account: String) -> Data? {
        lock.withLock { items[service]?[account] }
    }

    /// `SecItemDelete`; deleting a missing item succeeds.
    func delete(service: String, account: String) {
        lock.withLock { _ = items[service]?.removeValue(forKey: account) }
    }

    /// How many items a service holds.
    func count(service: String) -> Int {
        lock.withLock { items[service]?.count ?? 0 }
    }

    /// The old app's items as a `LegacyKeyValueSource`: the accounts of one service are its keys.
    func legacySource(service: String) -> some LegacyKeyValueSource {
        ClosureLegacyKeyValueSource(
            value: { [self] key in data(service: service, account: key) },
            remove: { [self] key in delete(service: service, account: key) })
    }
}

/// Lume after the migration: the analysis's `KeychainAuthTokenStorage`, an `AuthTokenPersistenceProtocol` with
/// FitIQ's seven methods over the Keychain (two strings and a user profile ID; the expiry is parsed from the
/// JWT when needed, Option B).
final class KeychainAuthTokenStorage: AuthTokenPersistenceProtocol {
    static let service = "com.lume.auth.tokenkit"
    private let keychain: SimulatedKeychain

    init(keychain: SimulatedKeychain) {
        self.keychain = keychain
    }

    func save(accessToken: String, refreshToken: String) throws {
        keychain.set(Data(accessToken.utf8), service: Self.service, account: "accessToken")
        keychain.set(Data(refreshToken.utf8), service: Self.service, account: "refreshToken")
    }

    func fetchAccessToken() throws -> String? { string("accessToken") }
    func fetchRefreshToken() throws -> String? { string("refreshToken") }

    func deleteTokens() throws {
        keychain.delete(service: Self.service, account: "accessToken")
        keychain.delete(service: Self.service, account: "refreshToken")
    }

    func saveUserProfileID(_ userID: UUID) throws {
        keychain.set(Data(userID.uuidString.utf8), service: Self.service, account: "userProfileID")
    }

    func fetchUserProfileID() throws -> UUID? { string("userProfileID").flatMap(UUID.init(uuidString:)) }
    func deleteUserProfileID() throws { keychain.delete(service: Self.service, account: "userProfileID") }

    private func string(_ account: String) -> String? {
        keychain.data(service: Self.service, account: account).map { String(decoding: $0, as: UTF8.self) }
    }
}
