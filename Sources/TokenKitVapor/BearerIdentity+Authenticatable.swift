// Compiled only with the `VaporMiddleware` package trait.
#if VaporMiddleware
    // The identity type lives in TokenVerification (the Hummingbird adapter shares it); `import TokenKitVapor` names it.
    @_exported import struct TokenVerification.BearerIdentity
    public import Vapor

    /// A verified Bearer identity is what Vapor's `req.auth` holds: `req.auth.require(BearerIdentity.self)`.
    extension BearerIdentity: Authenticatable {}
#endif
