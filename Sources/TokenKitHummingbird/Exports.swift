// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
// The identity type lives in TokenVerification (the Vapor adapter shares it); `import TokenKitHummingbird` keeps
// naming it.
@_exported import struct TokenVerification.BearerIdentity
// `BearerAuthRequestContext` refines hummingbird-auth's context: its `identity` and `requireIdentity()` are seen
// through `import TokenKitHummingbird` alone.
@_exported import protocol HummingbirdAuth.AuthRequestContext
#endif
