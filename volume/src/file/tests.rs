use std::os::unix::fs::symlink;

use super::*;

const LIMIT: u64 = MAX_FILE_BYTES;

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
}

/// `<tmp>/root` holding a Secret-volume layout (`..2024_01/tls.crt`,
/// `..data -> ..2024_01`, `tls.crt -> ..data/tls.crt`), and `<tmp>/outside`.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(root.join("..2024_01")).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(root.join("..2024_01/tls.crt"), b"cert").unwrap();
    symlink("..2024_01", root.join("..data")).unwrap();
    symlink("..data/tls.crt", root.join("tls.crt")).unwrap();
    std::fs::write(outside.join("secret"), b"outside").unwrap();
    (tmp, root, outside)
}

#[test]
fn symlinks_inside_the_root_are_followed_as_in_a_secret_volume() {
    let (_tmp, root, _) = layout();
    let roots = FileRoots::new([&root]).unwrap();
    assert_eq!(roots.read(&root.join("tls.crt"), LIMIT).unwrap(), b"cert");
    // `..` that stays inside, and an absolute link that points inside.
    symlink(root.join("..2024_01/tls.crt"), root.join("abs.crt")).unwrap();
    assert_eq!(roots.read(&root.join("abs.crt"), LIMIT).unwrap(), b"cert");
    let inside = root.join("..2024_01/../tls.crt");
    assert_eq!(roots.read(&inside, LIMIT).unwrap(), b"cert");
}

#[test]
fn a_symlink_leaving_the_root_is_refused() {
    let (_tmp, root, outside) = layout();
    symlink(outside.join("secret"), root.join("abs-out")).unwrap();
    symlink("../outside/secret", root.join("rel-out")).unwrap();
    // A directory link too: the file's own name is inside.
    symlink(&outside, root.join("dir-out")).unwrap();
    let roots = FileRoots::new([&root]).unwrap();
    for link in ["abs-out", "rel-out", "dir-out/secret"] {
        assert_eq!(
            roots.read(&root.join(link), LIMIT),
            Err(ReadError::OutsideRoots),
            "{link}"
        );
    }
}

#[test]
fn dot_dot_and_absolute_paths_outside_every_root_get_one_answer() {
    let (_tmp, root, outside) = layout();
    let roots = FileRoots::new([&root]).unwrap();
    for path in [
        root.join("../outside/secret"),
        root.join("../outside/no-such-file"),
        root.join("../../../../../../../../etc/hostname"),
        outside.join("secret"),
        outside.join("no-such-file"),
        PathBuf::from("/etc/hostname"),
        PathBuf::from("/no/such/dir/file"),
        // A sibling whose name starts like the root's.
        PathBuf::from(format!("{}-other/x", root.display())),
    ] {
        assert_eq!(
            roots.read(&path, LIMIT),
            Err(ReadError::OutsideRoots),
            "{}",
            path.display()
        );
    }
    // Inside a root, what is missing may be said.
    assert_eq!(
        roots.read(&root.join("missing.pem"), LIMIT),
        Err(ReadError::NotFound)
    );
    // Any of several roots will do.
    let both = FileRoots::new([&root, &outside]).unwrap();
    assert_eq!(
        both.read(&outside.join("secret"), LIMIT).unwrap(),
        b"outside"
    );
}

#[test]
fn a_fifo_is_refused_at_once_instead_of_blocking() {
    let (_tmp, root, _) = layout();
    let fifo = root.join("fifo.pem");
    mkfifo(&fifo);
    symlink("fifo.pem", root.join("link.pem")).unwrap();
    let roots = FileRoots::new([&root]).unwrap();
    for path in [&fifo, &root.join("link.pem")] {
        assert_eq!(roots.read(path, LIMIT), Err(ReadError::NotAFile));
        assert_eq!(read_regular(path, LIMIT), Err(ReadError::NotAFile));
    }
}

#[test]
fn a_directory_or_a_root_itself_is_not_a_file() {
    let (_tmp, root, _) = layout();
    let roots = FileRoots::new([&root]).unwrap();
    assert_eq!(roots.read(&root, LIMIT), Err(ReadError::NotAFile));
    assert_eq!(
        roots.read(&root.join("..data"), LIMIT),
        Err(ReadError::NotAFile)
    );
    assert_eq!(read_regular(&root, LIMIT), Err(ReadError::NotAFile));
}

#[test]
fn a_file_over_the_limit_is_refused() {
    let (_tmp, root, _) = layout();
    let big = root.join("big.pem");
    std::fs::write(&big, vec![b'x'; 1025]).unwrap();
    let roots = FileRoots::new([&root]).unwrap();
    assert_eq!(roots.read(&big, 1024), Err(ReadError::TooLarge(1024)));
    assert_eq!(read_regular(&big, 1024), Err(ReadError::TooLarge(1024)));
    assert_eq!(roots.read(&big, 1025).unwrap().len(), 1025);
    let over = root.join("over.pem");
    std::fs::write(&over, vec![b'x'; MAX_FILE_BYTES as usize + 1]).unwrap();
    assert_eq!(
        read_regular(&over, MAX_FILE_BYTES),
        Err(ReadError::TooLarge(MAX_FILE_BYTES))
    );
}

#[test]
fn relative_roots_and_paths_are_taken_from_the_working_directory() {
    let roots = FileRoots::new(["some/dir/../root"]).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(roots.dirs(), [cwd.join("some/root")]);
    assert_eq!(
        roots.read(Path::new("some/elsewhere/x"), LIMIT),
        Err(ReadError::OutsideRoots)
    );
}
