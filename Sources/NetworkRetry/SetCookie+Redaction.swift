import Foundation

extension SetCookie: CustomReflectable {
    /// The name, scope, expiry and flags; never the value (`dump(cookie)` shows this).
    package var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "name": name, "value": "<redacted>", "expiresAt": expiresAt as Any, "domain": domain,
                "includesSubdomains": includesSubdomains, "path": path, "isSecure": isSecure,
                "isHTTPOnly": isHTTPOnly, "sameSite": sameSite as Any,
            ],
            displayStyle: .struct)
    }
}
