package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// LogitOptions choose the estimator.
type LogitOptions struct {
	// Firth maximises the likelihood penalised by Jeffreys' prior (Firth 1993). Its estimates are finite even when
	// an outcome is perfectly separated by a feature, which happens whenever one method always resolves and another
	// never does, and its small-sample bias is lower. Without it the plain maximum-likelihood estimate is fitted.
	Firth bool
	// MaxIter bounds Newton iterations (default 100); Tol is the largest coefficient change taken as converged
	// (default 1e-10, on standardised features).
	MaxIter int
	Tol     float64
}

// LogitFit is a fitted logistic regression P(y=1 | x) = 1 / (1 + exp(-(b0 + b·x))).
type LogitFit struct {
	// Coef is the intercept followed by one coefficient per feature; SE their standard errors from the inverse
	// information matrix at the estimate.
	Coef, SE []float64
	// LogLik is the (unpenalised) log-likelihood at Coef.
	LogLik     float64
	Iterations int
	Converged  bool
	// Separated is set when the plain estimate diverged (coefficients without bound): a feature separates the
	// outcomes. Refit with Firth.
	Separated bool
	Firth     bool
}

// Prob is the fitted probability for one feature vector (no intercept entry).
func (f LogitFit) Prob(x []float64) float64 {
	eta := f.Coef[0]
	for j, v := range x {
		eta += f.Coef[j+1] * v
	}
	return sigmoid(eta)
}

// Wald returns the z statistic and two-sided p-value of coefficient j (0 is the intercept).
func (f LogitFit) Wald(j int) (z, p float64) {
	if f.SE[j] == 0 || math.IsNaN(f.SE[j]) {
		return math.NaN(), math.NaN()
	}
	z = f.Coef[j] / f.SE[j]
	return z, 2 * distuv.UnitNormal.Survival(math.Abs(z))
}

// ErrSingular means the features are collinear or constant on the data, so no unique fit exists.
var ErrSingular = errors.New("logistic regression: information matrix is singular (a feature is constant or a combination of others)")

// FitLogistic fits y (0 or 1) on the rows of x (n rows, k features each) with an intercept. Features are centred and
// scaled internally for numerical stability; the returned coefficients are on the original scale.
func FitLogistic(x [][]float64, y []float64, opt LogitOptions) (LogitFit, error) {
	n := len(x)
	if n == 0 || len(y) != n {
		return LogitFit{}, fmt.Errorf("logistic regression: %d feature rows for %d outcomes", n, len(y))
	}
	k := len(x[0])
	if n <= k+1 {
		return LogitFit{}, fmt.Errorf("logistic regression: %d observations for %d coefficients", n, k+1)
	}
	if opt.MaxIter <= 0 {
		opt.MaxIter = 100
	}
	if opt.Tol <= 0 {
		opt.Tol = 1e-10
	}
	X, mean, scale, err := standardize(x, y)
	if err != nil {
		return LogitFit{}, err
	}
	fit, beta, st, err := newtonFit(X, y, opt)
	if err != nil {
		return LogitFit{}, err
	}
	fit.originalScale(beta, st, mean, scale)
	fit.LogLik = st.loglik
	return fit, nil
}

// standardize checks x and y and returns the design matrix (an intercept column, then each feature centred and
// scaled to unit standard deviation) with the features' means and scales.
func standardize(x [][]float64, y []float64) (*mat.Dense, []float64, []float64, error) {
	n, k := len(x), len(x[0])
	p := k + 1
	mean, scale := make([]float64, k), make([]float64, k)
	for j := range k {
		for i := range n {
			if len(x[i]) != k {
				return nil, nil, nil, fmt.Errorf("logistic regression: row %d has %d features, want %d", i, len(x[i]), k)
			}
			mean[j] += x[i][j]
		}
		mean[j] /= float64(n)
		for i := range n {
			d := x[i][j] - mean[j]
			scale[j] += d * d
		}
		scale[j] = math.Sqrt(scale[j] / float64(n))
		if scale[j] == 0 {
			return nil, nil, nil, fmt.Errorf("feature %d is constant: %w", j, ErrSingular)
		}
	}
	for i := range n {
		if y[i] != 0 && y[i] != 1 {
			return nil, nil, nil, fmt.Errorf("logistic regression: outcome %d is %v, want 0 or 1", i, y[i])
		}
	}
	X := mat.NewDense(n, p, nil)
	for i := range n {
		X.Set(i, 0, 1)
		for j := range k {
			X.Set(i, j+1, (x[i][j]-mean[j])/scale[j])
		}
	}
	return X, mean, scale, nil
}

// newtonFit maximises the (Firth-penalised, when opt.Firth) likelihood by Newton steps on the standardised design
// X, and returns the fit's flags, the coefficients and the state at them.
func newtonFit(X *mat.Dense, y []float64, opt LogitOptions) (LogitFit, []float64, *state, error) {
	_, p := X.Dims()
	beta := make([]float64, p)
	st, err := logitState(X, y, beta, opt.Firth)
	if err != nil {
		return LogitFit{}, nil, nil, err
	}
	fit := LogitFit{Firth: opt.Firth}
	for fit.Iterations < opt.MaxIter {
		if maxAbs(st.step) < opt.Tol {
			fit.Converged = true
			break
		}
		fit.Iterations++
		step := slices.Clone(st.step)
		var next *state
		// Step halving keeps the (penalised) likelihood from decreasing.
		for range 40 {
			cand := make([]float64, p)
			for j := range p {
				cand[j] = beta[j] + step[j]
			}
			ns, err := logitState(X, y, cand, opt.Firth)
			if err == nil && ns.objective >= st.objective-1e-12*math.Abs(st.objective) {
				next, beta = ns, cand
				break
			}
			for j := range step {
				step[j] /= 2
			}
		}
		if next == nil {
			break
		}
		st = next
		if !opt.Firth && maxAbs(beta) > 50 {
			// On standardised features a coefficient of 50 means probabilities within e^-50 of 0 or 1: the
			// estimate is heading to infinity.
			fit.Separated = true
			break
		}
	}
	if !opt.Firth && !fit.Converged && maxAbs(beta) > 15 {
		fit.Separated = true
	}
	return fit, beta, st, nil
}

// originalScale sets the fit's coefficients and standard errors on the features' own scale from the standardised
// coefficients beta and the state at them.
func (fit *LogitFit) originalScale(beta []float64, st *state, mean, scale []float64) {
	p, k := len(beta), len(mean)
	// Back to the original scale: b_j = s_j' / scale_j, b_0 = s_0 - sum b_j mean_j. T maps standardised to original.
	T := mat.NewDense(p, p, nil)
	T.Set(0, 0, 1)
	for j := range k {
		T.Set(j+1, j+1, 1/scale[j])
		T.Set(0, j+1, -mean[j]/scale[j])
	}
	b := mat.NewVecDense(p, nil)
	b.MulVec(T, mat.NewVecDense(p, beta))
	var cov, tmp mat.Dense
	tmp.Mul(T, st.inv)
	cov.Mul(&tmp, T.T())
	fit.Coef, fit.SE = make([]float64, p), make([]float64, p)
	for j := range p {
		fit.Coef[j] = b.AtVec(j)
		fit.SE[j] = math.Sqrt(cov.At(j, j))
	}
}

// state is everything at one coefficient vector: likelihood, objective, Newton step, inverse information.
type state struct {
	loglik, objective float64
	step              []float64
	inv               *mat.Dense
}

func logitState(X *mat.Dense, y, beta []float64, firth bool) (*state, error) {
	n, p := X.Dims()
	pi, w := make([]float64, n), make([]float64, n)
	ll := 0.0
	info := mat.NewSymDense(p, nil)
	for i := range n {
		eta := 0.0
		for j := range p {
			eta += X.At(i, j) * beta[j]
		}
		pi[i] = sigmoid(eta)
		w[i] = pi[i] * (1 - pi[i])
		// log P(y_i) computed without forming log(0).
		if y[i] == 1 {
			ll -= softplus(-eta)
		} else {
			ll -= softplus(eta)
		}
		for a := range p {
			for c := a; c < p; c++ {
				info.SetSym(a, c, info.At(a, c)+w[i]*X.At(i, a)*X.At(i, c))
			}
		}
	}
	var chol mat.Cholesky
	if ok := chol.Factorize(info); !ok {
		return nil, ErrSingular
	}
	inv := mat.NewDense(p, p, nil)
	var invSym mat.SymDense
	if err := chol.InverseTo(&invSym); err != nil {
		return nil, ErrSingular
	}
	inv.Copy(&invSym)
	st := &state{loglik: ll, objective: ll, inv: inv}
	if math.IsNaN(ll) || math.IsInf(ll, 0) {
		return nil, errors.New("logistic regression: likelihood is not finite")
	}
	score := make([]float64, p)
	for i := range n {
		r := y[i] - pi[i]
		if firth {
			// h_i = w_i x_i' I^-1 x_i, the leverage; Firth's modified score adds h_i (1/2 - pi_i).
			h := 0.0
			for a := range p {
				for c := range p {
					h += X.At(i, a) * inv.At(a, c) * X.At(i, c)
				}
			}
			r += w[i] * h * (0.5 - pi[i])
		}
		for j := range p {
			score[j] += X.At(i, j) * r
		}
	}
	if firth {
		st.objective += 0.5 * chol.LogDet()
	}
	st.step = make([]float64, p)
	for a := range p {
		for c := range p {
			st.step[a] += inv.At(a, c) * score[c]
		}
	}
	return st, nil
}

func sigmoid(t float64) float64 {
	if t >= 0 {
		return 1 / (1 + math.Exp(-t))
	}
	e := math.Exp(t)
	return e / (1 + e)
}

// softplus is log(1 + e^t) without overflow.
func softplus(t float64) float64 {
	if t > 30 {
		return t + math.Exp(-t)
	}
	return math.Log1p(math.Exp(t))
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
