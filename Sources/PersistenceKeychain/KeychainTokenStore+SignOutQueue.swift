public import Foundation
public import Persistence

/// Pending sign-outs kept in the Keychain beside the session: one item per account, under the store's service,
/// access group and accessibility, with the account `<account>.pending-sign-outs`.
///
/// A change of the queue uses the protocol's default `updateSignOutQueue(account:_:)`, a read then a write: the
/// Keychain offers no lock, so an app and its extensions sharing the item through an access group and signing out
/// at the same moment may still lose one of the two changes (the revocation it held is then not sent again).
extension KeychainTokenStore: SignOutQueueStore {
    /// The Keychain account of the pending sign-outs of `account`.
    private func queueAccount(_ account: String) -> String { account + ".pending-sign-outs" }

    /// Reads the pending sign-outs of `account`.
    ///
    /// - Parameter account: The session's account key.
    /// - Returns: The blob, or `nil` when none is kept.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` while the device is locked (or while protected data
    ///   is unavailable and nothing is found), or another ``/Persistence/PersistenceError``.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        let (status, data) = keychain.copyMatching(queries.readQuery(account: queueAccount(account)))
        let read = KeychainStatusMapping.read(status, data: data, accessGroup: configuration.accessGroup)
        switch read {
        case .failure(let error):
            throw error
        case .success(nil):
            if isProtectedDataUnavailable {
                throw PersistenceError.unavailable.with(
                    detail: "\(KeychainStatus.itemNotFound) while protected data is unavailable")
            }
            return nil
        case .success(let data?):
            return data
        }
    }

    /// Replaces (or, for `nil`, deletes) the pending sign-outs of `account`.
    ///
    /// - Parameters:
    ///   - data: The new blob, or `nil`.
    ///   - account: The session's account key.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` while the device is locked, or another
    ///   ``/Persistence/PersistenceError``.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        let item = queueAccount(account)
        let status: KeychainStatus
        if let data {
            let updated = keychain.update(queries.itemQuery(account: item), with: queries.updateAttributes(data: data))
            status = updated == .itemNotFound ? keychain.add(queries.addAttributes(account: item, data: data)) : updated
        } else {
            let deleted = keychain.delete(queries.itemQuery(account: item))
            status = deleted == .itemNotFound ? .success : deleted
        }
        guard status == .success else {
            throw KeychainStatusMapping.error(status, accessGroup: configuration.accessGroup, fallback: .writeFailed)
        }
    }
}
