//! The identity layouts under the signing-keys type's reserved bits: an
//! account (`0xD1`), a handle (`0xD2`), an open session (`0xD3`), an invite
//! code (`0xD4`) and an app password (`0xD5`), byte for byte as
//! `docs/storage-keys.md` draws them.

use std::borrow::Cow;

use keycodec::records::{
    DecodedKey, RecordType, account_key, accounts_range, app_password_key, app_passwords_range,
    decode_key, handle_key, invite_code_key, invite_codes_range, refresh_token_key,
    signing_keys_key,
};

#[test]
fn identity_key_bytes_are_pinned() {
    assert_eq!(
        account_key("did:web:a.example"),
        [&[0x01, 0xD1][..], b"did:web:a.example\x00"].concat()
    );
    assert_eq!(
        handle_key("a.example"),
        [&[0x01, 0xD2][..], b"a.example\x00"].concat()
    );
    assert_eq!(
        refresh_token_key("j1"),
        [&[0x01, 0xD3][..], b"j1\x00"].concat()
    );
    assert_eq!(
        invite_code_key("c-1"),
        [&[0x01, 0xD4][..], b"c-1\x00"].concat()
    );
    assert_eq!(
        app_password_key("did:web:a.example", "bot"),
        [&[0x01, 0xD5][..], b"did:web:a.example\x00bot\x00"].concat()
    );
}

#[test]
fn each_decodes_as_its_kind_of_the_signing_keys_type() {
    let cases = [
        (
            account_key("did:web:a.example"),
            DecodedKey::Account {
                did: Cow::Borrowed("did:web:a.example"),
            },
        ),
        (
            handle_key("a.example"),
            DecodedKey::Handle {
                handle: Cow::Borrowed("a.example"),
            },
        ),
        (
            refresh_token_key("j1"),
            DecodedKey::RefreshToken {
                jti: Cow::Borrowed("j1"),
            },
        ),
        (
            invite_code_key("c-1"),
            DecodedKey::InviteCode {
                code: Cow::Borrowed("c-1"),
            },
        ),
        (
            app_password_key("did:web:a.example", "bot"),
            DecodedKey::AppPassword {
                did: Cow::Borrowed("did:web:a.example"),
                name: Cow::Borrowed("bot"),
            },
        ),
    ];
    for (key, expected) in cases {
        let decoded = decode_key(&key).unwrap();
        assert_eq!(decoded, expected);
        assert_eq!(decoded.record_type(), RecordType::SigningKeys);
        assert!(RecordType::SigningKeys.range().contains(&key));
    }
    // The accounts' range holds accounts only.
    let accounts = accounts_range();
    assert!(accounts.contains(&account_key("did:web:z")));
    assert!(!accounts.contains(&handle_key("a.example")));
    assert!(!accounts.contains(&signing_keys_key("did:web:a.example")));
    // An account's app passwords are its own: another DID that extends
    // this one is outside its range.
    let apps = app_passwords_range("did:web:a.example");
    assert!(apps.contains(&app_password_key("did:web:a.example", "bot")));
    assert!(!apps.contains(&app_password_key("did:web:a.example.org", "bot")));
    assert!(invite_codes_range().contains(&invite_code_key("c-1")));
    assert!(!invite_codes_range().contains(&refresh_token_key("c-1")));
    // Other reserved values stay refused.
    assert!(decode_key(&[0x01, 0xD6, b'x', 0x00]).is_err());
}
