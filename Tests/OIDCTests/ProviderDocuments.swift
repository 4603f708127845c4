import Foundation

/// Discovery documents shaped as the providers publish them (fields the hub reads, and some it does not), for the
/// README's per-provider settings. Google Workspace: https://accounts.google.com/.well-known/openid-configuration;
/// Microsoft Entra ID (v2.0, one tenant); Keycloak (a realm).
enum ProviderDocuments {
    static let google = """
        {"issuer": "https://accounts.google.com",
         "authorization_endpoint": "https://accounts.google.com/o/oauth2/v2/auth",
         "device_authorization_endpoint": "https://oauth2.googleapis.com/device/code",
         "token_endpoint": "https://oauth2.googleapis.com/token",
         "userinfo_endpoint": "https://openidconnect.googleapis.com/v1/userinfo",
         "revocation_endpoint": "https://oauth2.googleapis.com/revoke",
         "jwks_uri": "https://www.googleapis.com/oauth2/v3/certs",
         "response_types_supported": ["code", "token", "id_token", "code token", "code id_token", "token id_token",
           "code token id_token", "none"],
         "subject_types_supported": ["public"], "id_token_signing_alg_values_supported": ["RS256"],
         "scopes_supported": ["openid", "email", "profile"],
         "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
         "claims_supported": ["aud", "email", "email_verified", "exp", "family_name", "given_name", "iat", "iss",
           "name", "picture", "sub"],
         "code_challenge_methods_supported": ["plain", "S256"],
         "grant_types_supported": ["authorization_code", "refresh_token",
           "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:jwt-bearer"]}
        """

    static let entraTenant = "4d3c2b1a-0000-4000-8000-000000000001"
    static let entra = """
        {"token_endpoint": "https://login.microsoftonline.com/\(entraTenant)/oauth2/v2.0/token",
         "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "client_secret_basic"],
         "jwks_uri": "https://login.microsoftonline.com/\(entraTenant)/discovery/v2.0/keys",
         "response_modes_supported": ["query", "fragment", "form_post"],
         "subject_types_supported": ["pairwise"], "id_token_signing_alg_values_supported": ["RS256"],
         "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
         "scopes_supported": ["openid", "profile", "email", "offline_access"],
         "issuer": "https://login.microsoftonline.com/\(entraTenant)/v2.0",
         "request_uri_parameter_supported": false,
         "userinfo_endpoint": "https://graph.microsoft.com/oidc/userinfo",
         "authorization_endpoint": "https://login.microsoftonline.com/\(entraTenant)/oauth2/v2.0/authorize",
         "device_authorization_endpoint": "https://login.microsoftonline.com/\(entraTenant)/oauth2/v2.0/devicecode",
         "http_logout_supported": true, "frontchannel_logout_supported": true,
         "end_session_endpoint": "https://login.microsoftonline.com/\(entraTenant)/oauth2/v2.0/logout",
         "claims_supported": ["sub", "iss", "cloud_instance_name", "cloud_instance_host_name", "cloud_graph_host_name",
           "msgraph_host", "aud", "exp", "iat", "auth_time", "acr", "nonce", "preferred_username", "name", "tid",
           "ver", "at_hash", "c_hash", "email"],
         "kerberos_endpoint": "https://login.microsoftonline.com/\(entraTenant)/kerberos",
         "tenant_region_scope": "EU", "cloud_instance_name": "microsoftonline.com",
         "cloud_graph_host_name": "graph.windows.net", "msgraph_host": "graph.microsoft.com",
         "rbac_url": "https://pas.windows.net"}
        """

    static let keycloak = """
        {"issuer": "https://id.school.example/realms/school",
         "authorization_endpoint": "https://id.school.example/realms/school/protocol/openid-connect/auth",
         "token_endpoint": "https://id.school.example/realms/school/protocol/openid-connect/token",
         "introspection_endpoint": "https://id.school.example/realms/school/protocol/openid-connect/token/introspect",
         "userinfo_endpoint": "https://id.school.example/realms/school/protocol/openid-connect/userinfo",
         "end_session_endpoint": "https://id.school.example/realms/school/protocol/openid-connect/logout",
         "frontchannel_logout_session_supported": true, "frontchannel_logout_supported": true,
         "jwks_uri": "https://id.school.example/realms/school/protocol/openid-connect/certs",
         "check_session_iframe": "https://id.school.example/realms/school/protocol/openid-connect/login-status-iframe.html",
         "grant_types_supported": ["authorization_code", "implicit", "refresh_token", "password", "client_credentials"],
         "response_types_supported": ["code", "none", "id_token", "token", "id_token token", "code id_token",
           "code token", "code id_token token"],
         "subject_types_supported": ["public", "pairwise"],
         "id_token_signing_alg_values_supported": ["PS384", "ES384", "RS384", "HS256", "HS512", "ES256", "RS256",
           "HS384", "ES512", "PS256", "PS512", "RS512"],
         "token_endpoint_auth_methods_supported": ["private_key_jwt", "client_secret_basic", "client_secret_post",
           "tls_client_auth", "client_secret_jwt"],
         "claims_supported": ["aud", "sub", "iss", "auth_time", "name", "given_name", "family_name",
           "preferred_username", "email", "acr"],
         "scopes_supported": ["openid", "profile", "email", "roles", "web-origins", "offline_access", "microprofile-jwt"],
         "code_challenge_methods_supported": ["plain", "S256"],
         "backchannel_logout_supported": true, "backchannel_logout_session_supported": true}
        """
}
