import AuthToken
import Foundation

// Prints the expiry of a token read from standard input, or why it cannot be read.
let token = readLine() ?? ""
do {
    let jwt = try JWT(parsing: token)
    print(jwt.claims.expiration.map { "expires \($0)" } ?? "no exp claim")
} catch {
    print(error)
}
