// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Crypto
public import Foundation
import NIOCore
public import Persistence
import PostgresNIO

/// A client over a `PostgresTokenStore` keeps its pending sign-outs in the same database, so a replica that signs out
/// while the token server is unreachable and then stops leaves them for the next replica that starts.
extension PostgresTokenStore: SignOutQueueStore {
    /// Reads the pending sign-outs of `account` from the table beside the sessions' (`<table>_sign_outs`).
    ///
    /// - Parameter account: The account key.
    /// - Returns: The bytes the client wrote, or `nil` when nothing is pending.
    /// - Throws: ``/Persistence/PersistenceError/readFailed`` when the database cannot be read now,
    ///   ``/Persistence/PersistenceError/wrongKey`` when the entry was sealed with another key, and
    ///   ``/Persistence/PersistenceError/corrupt`` when it does not open. The client then reads it again later.
    public func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        let table = try signOutTable()
        let queryLogger = queryLogger
        let entry = try await database(.readFailed) {
            try await self.withSessionConnection { connection -> SignOutEntry? in
                let rows = try await connection.query(
                    "SELECT key_check, payload FROM \(unescaped: table) WHERE account = \(account)",
                    logger: queryLogger)
                for try await (keyCheck, payload) in rows.decode((String?, ByteBuffer).self) {
                    return SignOutEntry(keyCheck: keyCheck, payload: Array(payload.readableBytesView))
                }
                return nil
            }
        }
        guard let entry else { return nil }
        return try format.openSignOuts(entry, account: account)
    }

    /// Replaces the pending sign-outs of `account`, or removes them for `nil`.
    ///
    /// - Parameters:
    ///   - data: The bytes to keep (sealed with ``Configuration/encryptionKey`` when there is one), or `nil`.
    ///   - account: The account key.
    /// - Throws: ``/Persistence/PersistenceError/writeFailed`` when the database cannot be written now.
    public func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        let table = try signOutTable()
        let queryLogger = queryLogger
        guard let data else {
            try await database(.writeFailed) {
                try await self.withSessionConnection { connection in
                    _ = try await connection.query(
                        "DELETE FROM \(unescaped: table) WHERE account = \(account)", logger: queryLogger)
                }
            }
            return
        }
        let payload = ByteBuffer(bytes: try format.sealSignOuts(data, account: account))
        let keyCheck = format.keyCheck
        try await database(.writeFailed) {
            try await self.withSessionConnection { connection in
                _ = try await connection.query(
                    """
                    INSERT INTO \(unescaped: table) (account, key_check, payload) VALUES (\(account), \(keyCheck), \(payload))
                    ON CONFLICT (account) DO UPDATE
                    SET key_check = EXCLUDED.key_check, payload = EXCLUDED.payload, updated_at = now()
                    """, logger: queryLogger)
            }
        }
    }

    /// The pending sign-outs' table: the sessions' table name with `_sign_outs` appended.
    func signOutTable() throws(PersistenceError) -> String {
        let name = Self.signOutTableName(for: table)
        guard let last = name.split(separator: ".").last, last.count <= 63 else {
            throw PersistenceError.unavailable.with(
                detail: "the sessions' table name is too long for its sign-outs table (\(name.count) characters)")
        }
        return name
    }

    static func signOutTableName(for table: String) -> String { table + "_sign_outs" }

    /// Creates the pending sign-outs' table if it does not exist (run with the sessions' table).
    func createSignOutTable(on connection: PostgresConnection) async throws {
        let name = Self.signOutTableName(for: table)
        guard let last = name.split(separator: ".").last, last.count <= 63 else { return }
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS \(unescaped: name) (
                account text PRIMARY KEY,
                key_check text,
                payload bytea NOT NULL,
                updated_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: queryLogger)
    }
}

/// A pending sign-outs entry as stored.
struct SignOutEntry: Sendable {
    let keyCheck: String?
    let payload: [UInt8]
}

extension SessionRowFormat {
    /// The stored bytes for `account`'s pending sign-outs: as they are without a key, else sealed with AES-GCM and
    /// authenticated with the account (an entry copied to another account does not open).
    func sealSignOuts(_ data: Data, account: String) throws(PersistenceError) -> [UInt8] {
        guard let key else { return Array(data) }
        guard let box = try? AES.GCM.seal(data, using: key, authenticating: Self.signOutsData(account: account)),
            let combined = box.combined
        else { throw PersistenceError.writeFailed.with(detail: "sealing the pending sign-outs failed") }
        return Array(combined)
    }

    /// The pending sign-outs in `entry`, or why they cannot be read.
    func openSignOuts(_ entry: SignOutEntry, account: String) throws(PersistenceError) -> Data {
        switch (entry.keyCheck, key) {
        case (nil, nil):
            return Data(entry.payload)
        case (let stored?, let key?) where stored == keyCheck:
            guard let box = try? AES.GCM.SealedBox(combined: entry.payload),
                let opened = try? AES.GCM.open(box, using: key, authenticating: Self.signOutsData(account: account))
            else { throw PersistenceError.corrupt.with(detail: "the sealed pending sign-outs do not open") }
            return opened
        default:
            throw PersistenceError.wrongKey.with(detail: "the pending sign-outs are sealed differently")
        }
    }

    private static func signOutsData(account: String) -> Data {
        Data("TokenKit.PostgresTokenStore.sign-outs.v1|\(account)".utf8)
    }
}
#endif
