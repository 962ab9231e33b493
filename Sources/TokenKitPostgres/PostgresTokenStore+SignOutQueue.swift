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

    /// Replaces the pending sign-outs of `account` with what `update` makes of them, in one transaction that holds the
    /// account's row in `<table>_sign_outs` (`SELECT ... FOR UPDATE`) from the read to the write, so replicas changing
    /// them at once each see the other's change. With no row yet, two replicas inserting at once are told apart by the
    /// insert, and the one that lost starts again (at most three times in all).
    ///
    /// - Parameters:
    ///   - account: The account key.
    ///   - update: Makes the new bytes from the ones kept now (`nil` when none); `nil` removes them.
    /// - Returns: The bytes kept afterwards.
    /// - Throws: ``/Persistence/PersistenceError/writeFailed`` when the database cannot be written now;
    ///   ``/Persistence/PersistenceError/wrongKey`` or ``/Persistence/PersistenceError/corrupt`` when the kept entry
    ///   does not open. Nothing is changed then.
    public func updateSignOutQueue(
        account: String, _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws(PersistenceError) -> Data? {
        let table = try signOutTable()
        for _ in 0..<3 {
            let outcome = try await database(.writeFailed) {
                try await self.withSessionConnection { connection in
                    try await self.updateSignOutQueue(account: account, in: table, on: connection, update)
                }
            }
            switch outcome {
            case .written(let new): return new
            case .refused(let error): throw error
            case .raced: continue
            }
        }
        throw PersistenceError.writeFailed.with(detail: "the pending sign-outs kept changing under the update")
    }

    /// One attempt of ``updateSignOutQueue(account:_:)``, in a transaction on `connection`.
    private func updateSignOutQueue(
        account: String, in table: String, on connection: PostgresConnection,
        _ update: @escaping @Sendable (Data?) -> Data?
    ) async throws -> SignOutUpdate {
        let queryLogger = queryLogger
        return try await connection.withTransaction(logger: queryLogger) { connection -> SignOutUpdate in
            let rows = try await connection.query(
                "SELECT key_check, payload FROM \(unescaped: table) WHERE account = \(account) FOR UPDATE",
                logger: queryLogger)
            var entry: SignOutEntry?
            for try await (keyCheck, payload) in rows.decode((String?, ByteBuffer).self) {
                entry = SignOutEntry(keyCheck: keyCheck, payload: Array(payload.readableBytesView))
            }
            var current: Data?
            do throws(PersistenceError) {
                if let entry { current = try self.format.openSignOuts(entry, account: account) }
            } catch {
                return .refused(error)
            }
            guard let new = update(current) else {
                if entry != nil {
                    _ = try await connection.query(
                        "DELETE FROM \(unescaped: table) WHERE account = \(account)", logger: queryLogger)
                }
                return .written(nil)
            }
            let sealed: [UInt8]
            do throws(PersistenceError) {
                sealed = try self.format.sealSignOuts(new, account: account)
            } catch {
                return .refused(error)
            }
            let (payload, keyCheck) = (ByteBuffer(bytes: sealed), self.format.keyCheck)
            guard entry == nil else {
                _ = try await connection.query(
                    """
                    UPDATE \(unescaped: table) SET key_check = \(keyCheck), payload = \(payload), updated_at = now()
                    WHERE account = \(account)
                    """, logger: queryLogger)
                return .written(new)
            }
            // No row to lock: a concurrent insert may win the race, and then this attempt starts again.
            let inserted = try await connection.query(
                """
                INSERT INTO \(unescaped: table) (account, key_check, payload) VALUES (\(account), \(keyCheck), \(payload))
                ON CONFLICT (account) DO NOTHING
                RETURNING account
                """, logger: queryLogger)
            var landed = false
            for try await _ in inserted.decode(String.self) { landed = true }
            return landed ? .written(new) : .raced
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

/// How one attempt of `PostgresTokenStore.updateSignOutQueue(account:_:)` ended.
enum SignOutUpdate: Sendable {
    /// The new bytes are kept (`nil`: none).
    case written(Data?)
    /// The kept entry does not open, or the new one cannot be sealed: nothing was changed.
    case refused(PersistenceError)
    /// Another replica inserted the row first: start again.
    case raced
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
