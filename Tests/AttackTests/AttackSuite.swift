import Testing

/// The attacks suite: each file holds what an attacker tried against one area, through TokenKit's public API only,
/// and each test's name says the attack. Every test here must fail on a TokenKit without the defence it names.
enum AttackSuite {}
