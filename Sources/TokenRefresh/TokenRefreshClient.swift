// Placeholder: the TokenRefresh issue builds TokenRefreshClient here.
internal import AuthToken
