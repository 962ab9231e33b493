// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Foundation
public import PostgresNIO

extension PostgresTokenStore {
    /// A client configuration from a `postgres://USER[:PASSWORD]@HOST[:PORT][/DATABASE]` URL, with TLS off: for a
    /// server on loopback (tests, `.ci/postgres`, the examples). A server elsewhere needs a configuration with TLS.
    ///
    /// - Parameter url: The URL; the port defaults to 5432.
    /// - Returns: The configuration, or `nil` when the URL has no host or no user, or when its host is not
    ///   loopback (`localhost`, `127.0.0.0/8`, `::1`): credentials and tokens never cross a network unencrypted.
    public static func loopbackClientConfiguration(url: String) -> PostgresClient.Configuration? {
        guard let components = URLComponents(string: url), let host = components.host, let user = components.user,
            isLoopback(host)
        else { return nil }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let address = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        return PostgresClient.Configuration(
            host: address, port: components.port ?? 5432, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: .disable)
    }

    /// Whether `host` names this machine: `localhost`, an IPv4 address in `127.0.0.0/8`, or `::1`. Names that
    /// merely resolve to loopback (an `/etc/hosts` entry) do not count: they could resolve elsewhere tomorrow.
    static func isLoopback(_ host: String) -> Bool {
        var name = host.lowercased()
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty && part.count <= 3 && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
                && (Int(part) ?? 256) <= 255
        }
    }
}
#endif
