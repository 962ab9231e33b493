// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Crypto
import Logging
import PostgresNIO
import Testing
import TokenKitLogCheck

@testable import TokenKitPostgres

/// What an attacker could try against the PostgreSQL store without a server in the way: credentials sent in clear
/// to a host elsewhere, row bytes in trace logs, a lock key another role can compute. No PostgreSQL needed.
@Suite(.logLeakCheck())
struct PostgresStoreHardeningTests {
    @Test(arguments: [
        "postgres://app:pw@db.example.com:5432/app", "postgres://app@10.0.0.5/app",
        "postgres://app@127.0.0.1.example.com/app", "postgres://app@localhost.example.com/app",
        "postgres://app@128.0.0.1/app", "postgres://app@127.0.0.256/app", "postgres://app@[2001:db8::1]/app",
    ])
    func aURLNamingAHostElsewhereGetsNoConfigurationWithTLSOff(url: String) {
        #expect(PostgresTokenStore.loopbackClientConfiguration(url: url) == nil)
    }

    @Test(arguments: [
        "postgres://app@127.0.0.1/app", "postgres://app@localhost:5433/app", "postgres://app@127.1.2.3/app",
        "postgres://app@[::1]/app", "postgres://app@LOCALHOST/app",
    ])
    func aLoopbackURLStillGetsItsConfiguration(url: String) {
        #expect(PostgresTokenStore.loopbackClientConfiguration(url: url) != nil)
    }

    @Test func postgresNIOIsNeverHandedATraceLoggerThatWouldLogTheRows() {
        var logger = Logger(label: "app")
        logger.logLevel = .trace
        let store = PostgresTokenStore(client: Self.idleClient(), logger: logger)

        #expect(store.queryLogger.logLevel >= .debug)
        #expect(store.logger.logLevel == .trace, "the store's own lines keep the level the app chose")
    }

    @Test func anotherRoleCannotComputeAnAccountsLockKeyWithoutTheDeploymentSecret() {
        let secret = SymmetricKey(size: .bits256)
        let replicaA = PostgresTokenStore(client: Self.idleClient(), configuration: .init(lockKeySecret: secret))
        let replicaB = PostgresTokenStore(client: Self.idleClient(), configuration: .init(lockKeySecret: secret))
        let outsider = PostgresTokenStore(client: Self.idleClient())
        let otherDeployment = PostgresTokenStore(
            client: Self.idleClient(), configuration: .init(lockKeySecret: SymmetricKey(size: .bits256)))

        #expect(replicaA.advisoryLockKey(account: "alice") == replicaB.advisoryLockKey(account: "alice"))
        #expect(replicaA.advisoryLockKey(account: "alice") != outsider.advisoryLockKey(account: "alice"))
        #expect(replicaA.advisoryLockKey(account: "alice") != otherDeployment.advisoryLockKey(account: "alice"))
        #expect(replicaA.advisoryLockKey(account: "alice") != replicaA.advisoryLockKey(account: "bob"))
    }

    /// A client that is never run, so it never connects.
    static func idleClient() -> PostgresClient {
        PostgresClient(
            configuration: .init(host: "127.0.0.1", username: "nobody", password: nil, database: nil, tls: .disable))
    }
}
#endif
